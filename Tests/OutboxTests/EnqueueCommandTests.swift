import CLITestSupport
import Foundation
import Testing

/// `outbox enqueue` (and the other outbox commands) with a root given as a
/// bare relative directory: it is created where the command runs.
@Suite("outbox enqueue with a relative directory")
struct EnqueueCommandTests {
    /// Runs the built tool in `directory` (the tests' helper always runs it
    /// in the test process's working directory).
    static func run(_ arguments: [String], in directory: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        let executable = try #require(OutboxTool.executable, "build with `swift build --build-tests`")
        let stdoutPath = directory + "/.stdout"
        let stderrPath = directory + "/.stderr"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try stdout.close()
        try stderr.close()
        defer {
            try? FileManager.default.removeItem(atPath: stdoutPath)
            try? FileManager.default.removeItem(atPath: stderrPath)
        }
        return (
            status,
            String(decoding: FileManager.default.contents(atPath: stdoutPath) ?? Data(), as: UTF8.self),
            String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self)
        )
    }

    @Test("`outbox enqueue myqueue …` creates ./myqueue and enqueues; list and stats find it there")
    func bareRelativeDirectory() async throws {
        let root = TemporaryRoot()
        let enqueue = try await Self.run(["enqueue", "myqueue", "--count", "2", "--size", "16"], in: root.path.string)
        #expect(enqueue.status == 0, "stderr: \(enqueue.stderr)")
        #expect(enqueue.stdout.split(separator: "\n").count == 2)
        let queues = try FileManager.default.contentsOfDirectory(atPath: root.path.string + "/myqueue/partitions")
        #expect(queues.count == 1 && queues[0].hasPrefix("outbox+"), "\(queues)")

        let list = try await Self.run(["list", "myqueue", "--json"], in: root.path.string)
        #expect(list.status == 0, "stderr: \(list.stderr)")
        let stats = try await Self.run(["stats", "myqueue"], in: root.path.string)
        #expect(stats.status == 0, "stderr: \(stats.stderr)")
    }
}
