import OutboxLog
import SystemPackage

/// Reopens a crashed log and holds it to the oracle: the step every crash
/// mode ends with.
enum RecoveryCheck {
    /// A recovery that kept the promise.
    struct Passed: Sendable {
        var state: StateModel
        var recovery: RecoveryReport
        /// How many steps of the history the log holds.
        var prefix: Int
    }

    /// What the acknowledgements promised.
    enum Expectation: Sendable {
        /// `acknowledged` steps returned, `inFlight` more may have landed,
        /// and every promise of at least `keeping` must have survived.
        case crash(acknowledged: Int, inFlight: Int, keeping: Durability)
        /// The log was closed cleanly: exactly the whole history.
        case complete
    }

    /// Opens the log in `directory` (strict), reads everything back through
    /// both read paths, checks it against `oracle`, and closes it. Returns
    /// the violation as text if anything is wrong.
    static func reopen(
        _ directory: FilePath, fileSystem: any FileSystem = PosixFileSystem(), readOnly: Bool = false,
        oracle: PrefixOracle, expecting expectation: Expectation
    ) async -> Result<Passed, Failure> {
        var configuration = TortureLogConfiguration.make(fileSystem: fileSystem, deterministic: true)
        configuration.readOnly = readOnly
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(at: directory, configuration: configuration)
        } catch {
            return .failure(Failure("the strict open failed: \(error)"))
        }
        // The open's checkpoint may roll a segment and start a compaction:
        // let it finish before reading, so every run reads in one order.
        await log.waitForBackgroundCompaction()
        defer { withExtendedLifetime(log) {} }
        let reading: LogContents.Reading
        do {
            reading = try await LogContents.read(log)
        } catch {
            try? await log.close()
            return .failure(Failure("reading the recovered log failed: \(error)"))
        }
        do {
            try await log.close()
        } catch {
            return .failure(Failure("closing the recovered log failed: \(error)"))
        }
        if !reading.problems.isEmpty {
            return .failure(Failure(reading.problems.prefix(3).joined(separator: "; ")))
        }
        let verdict: PrefixOracle.Verdict
        switch expectation {
        case .crash(let acknowledged, let inFlight, let keeping):
            verdict = oracle.check(reading.state, acknowledged: acknowledged, inFlight: inFlight, keeping: keeping)
        case .complete:
            verdict = oracle.checkComplete(reading.state)
        }
        switch verdict {
        case .prefix(let length):
            return .success(Passed(state: reading.state, recovery: log.recoveryReport, prefix: length))
        case .violation(let detail):
            return .failure(Failure(detail + " [recovery: \(oneLine(log.recoveryReport.description))]"))
        }
    }

    struct Failure: Error, Sendable, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func oneLine(_ text: String) -> String { text.split(whereSeparator: \.isNewline).joined(separator: "; ") }
}
