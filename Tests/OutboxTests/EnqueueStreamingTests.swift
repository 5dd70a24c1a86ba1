import CLITestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `outbox enqueue --count N` acknowledges each batch as soon as it is
/// durable: a process killed after its first line leaves most of the run
/// unwritten, and every line it printed names an entry on disk.
@Suite("outbox enqueue streams its acknowledgements", .serialized, .timeLimit(.minutes(5)))
struct EnqueueStreamingTests {
    static let count = 200_000

    /// Reads `handle` on this thread until it holds a line break or ends.
    static func readFirstLine(_ handle: FileHandle) -> Data {
        var data = Data()
        while !data.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            data += chunk
        }
        return data
    }

    @Test("killed -9 after its first acknowledgement, enqueue has written a part of the run, and every printed entry is in the queue")
    func killedAfterFirstLine() async throws {
        let executable = try #require(OutboxTool.executable, "build with `swift build --build-tests`")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-stream-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let pipe = Pipe()
        let process = Process()
        process.executableURL = executable
        process.arguments = ["enqueue", root, "--count", "\(Self.count)", "--size", "10", "--batch", "100"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let ended = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { ended.continuation.yield($0.terminationReason == .uncaughtSignal ? -$0.terminationStatus : $0.terminationStatus) }
        try process.run()
        let reader = pipe.fileHandleForReading
        // Blocking reads, off the cooperative pool.
        let first = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: Self.readFirstLine(reader)) }
        }
        kill(process.processIdentifier, SIGKILL)
        let rest = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: reader.readDataToEndOfFile()) }
        }
        var statuses = ended.stream.makeAsyncIterator()
        let status = await statuses.next()
        let printed = String(decoding: first + rest, as: UTF8.self).split(separator: "\n").filter { $0.hasSuffix(" spooled") }
        let printedIDs = Set(printed.map { String($0.split(separator: " ")[0]) })
        #expect(!printedIDs.isEmpty, "no acknowledgement before the kill")

        let list = try await OutboxTool.run(["list", root, "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let stored = Set(list.stdoutLines.compactMap { OutboxTool.jsonObject($0)?["id"] as? String })
        #expect(printedIDs.isSubset(of: stored), "\(printedIDs.subtracting(stored).count) acknowledged entries are not in the queue")
        #expect(
            stored.count < Self.count,
            "the first acknowledgement came only after all \(Self.count) entries were written (exit \(status ?? 0))")
        // Whole batches, each all or nothing.
        #expect(stored.count % 100 == 0, "\(stored.count) entries stored")
    }

    @Test("a run of several batches with --depends-on goes to the queue, which refuses an unknown dependency")
    func dependenciesAreChecked() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-stream-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let unknown = UUID().uuidString
        let run = try await OutboxTool.run(["enqueue", root, "--count", "300", "--size", "10", "--depends-on", unknown])
        #expect(run.status != 0)
        #expect(run.stdoutLines.isEmpty, "\(run.stdout.prefix(200))")
        #expect(run.stderr.lowercased().contains("depend"), "\(run.stderr)")
        let stats = try await OutboxTool.run(["stats", root, "--json"])
        #expect(stats.stdout.contains("\"quarantined\":0"), "\(stats.stdout.prefix(400))")
    }

    @Test("--atomic writes the run as one batch and prints it at the end; --batch and --atomic exclude each other")
    func atomicRun() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-stream-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let run = try await OutboxTool.run(["enqueue", root, "--count", "1000", "--size", "10", "--atomic"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdoutLines.count == 1000)
        let both = try await OutboxTool.run(["enqueue", root, "--count", "10", "--size", "10", "--atomic", "--batch", "5"])
        #expect(both.status != 0)
        #expect(both.stderr.contains("--batch and --atomic exclude each other"), "\(both.stderr)")
        let stats = try await OutboxTool.run(["stats", root, "--json"])
        #expect(stats.stdout.contains("\"pending\":1000"), "\(stats.stdout)")
    }
}
