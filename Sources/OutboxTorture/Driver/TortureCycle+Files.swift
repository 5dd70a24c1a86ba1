import SystemPackage

extension TortureCycle {
    /// Runs `steps` in `directory`, emptied first; `false` after a violation.
    func run(
        in directory: FilePath, report: inout TortureReport,
        _ steps: (inout TortureReport) async throws(CycleViolation) -> Void
    ) async -> Bool {
        await run(report: &report) { (report: inout TortureReport) async throws(CycleViolation) in
            try await Self.freshDirectory(directory)
            try await steps(&report)
        }
    }

    /// A cycle's own empty directory (an old one's files removed).
    static func freshDirectory(_ directory: FilePath) async throws(CycleViolation) {
        do { try await Blocking.freshDirectory(directory.string) } catch { throw CycleViolation("cannot prepare \(directory): \(error)") }
    }

    /// An encrypted store's files under `directory` hold none of `needles`.
    static func checkNoPlaintext(_ needles: [String], under directory: FilePath) async throws(CycleViolation) {
        let path = directory.string
        let leak: String?
        do {
            leak = try await Blocking.run({ PlaintextScan.first(of: needles, under: path) })
        } catch {
            throw CycleViolation("encrypted store: the leak scan failed: \(error)")
        }
        if let leak { throw CycleViolation("encrypted store: \(leak)") }
    }
}
