import CLITestSupport
import Foundation
import Testing

/// A long `outbox enqueue` run keeps nothing per entry: its memory does not
/// grow with the run (it writes through spools and never loads the queue),
/// and the next open moves every entry in.
@Suite(
    "outbox enqueue's memory stays bounded", .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["TSAN_OPTIONS"] == nil
            && ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil,
        "a sanitized build's memory is the sanitizer's, not the product's"))
struct EnqueueMemoryTests {
    /// The largest resident size (kB) of `arguments` run as a child, as
    /// the kernel accounts it (`getrusage` of the children of a Python
    /// wrapper, the only child it has), with its exit status.
    static func peakResidentKilobytes(_ arguments: [String]) throws -> (kilobytes: Int, status: Int32) {
        let wrapper = """
            import resource, subprocess, sys
            status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
            print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, status)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", wrapper] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let kilobytes = Int(fields[0]), let status = Int32(fields[1]) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "wrapper printed \(fields)"])
        }
        return (kilobytes, status)
    }

    @Test("300,000 entries in batches stay under 100 MB, and the next open finds them all")
    func boundedRun() async throws {
        let executable = try #require(OutboxTool.executable, "build with `swift build --build-tests`")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-memory-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let count = 300_000
        // Loading that many entries into a queue takes about 440 bytes each
        // (130 MB here): a run that held the queue open could not stay under.
        let run = try Self.peakResidentKilobytes(
            [executable.path, "enqueue", root, "--count", "\(count)", "--size", "16", "--batch", "1000"])
        #expect(run.status == 0)
        #expect(run.kilobytes < 100 * 1024, "peak resident \(run.kilobytes) kB")
        let stats = try await OutboxTool.run(["stats", root, "--json"])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stdout.contains("\"pending\":\(count)"), "\(stats.stdout.prefix(400))")
    }
}
