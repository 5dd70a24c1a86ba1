import CLITestSupport
import Foundation
import OutboxQueue
import Testing

/// A directory path of its own, not created (the commands do), removed
/// when the test drops it.
final class ScratchDirectory: Sendable {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-queue-cli-\(UUID().uuidString)").path
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// `outbox queue …`, run as real child processes.
@Suite("Command-line tool: the queue")
struct QueueCommandTests {
    func outbox(_ arguments: String..., input: String? = nil) async throws -> OutboxTool.Run {
        try await OutboxTool.run(arguments, input: input.map { Data($0.utf8) })
    }

    @Test("append takes arguments or lines of standard input; consume prints them once, in order, and commits")
    func appendAndConsume() async throws {
        let directory = ScratchDirectory()
        let path = directory.path
        let first = try await outbox("queue", "append", path, "--create", "one", "two words")
        #expect(first.status == 0 && first.stdoutLines.count == 2, "\(first.stderr)")
        let second = try await outbox("queue", "append", path, input: "three\n\nfive")
        #expect(second.status == 0 && second.stdoutLines.count == 3, "\(second.stderr)")
        let positions = (first.stdoutLines + second.stdoutLines).compactMap { UInt64($0) }
        #expect(positions == positions.sorted() && Set(positions).count == 5)

        let two = try await outbox("queue", "consume", path, "--consumer", "c", "--max", "2")
        #expect(two.stdout == "one\ntwo words\n", "\(two.stderr)")
        let peek = try await outbox("queue", "consume", path, "--consumer", "c", "--no-commit")
        #expect(peek.stdout == "three\n\nfive\n", "\(peek.stderr)")
        let rest = try await outbox("queue", "consume", path, "--consumer", "c", "--json")
        let objects = rest.stdoutLines.compactMap(OutboxTool.jsonObject)
        #expect(objects.map { $0["text"] as? String } == ["three", "", "five"])
        #expect(objects.map { ($0["position"] as? NSNumber)?.uint64Value } == positions[2...].map { $0 })
        #expect(objects.allSatisfy { $0["appendedAt"] is NSNumber })
        let none = try await outbox("queue", "consume", path, "--consumer", "c")
        #expect(none.status == 0 && none.stdout.isEmpty)

        let stats = try await outbox("queue", "stats", path, "--json")
        let report = try #require(OutboxTool.jsonObject(stats.stdoutLines.first ?? ""), "\(stats.stdout) \(stats.stderr)")
        #expect(report["elements"] as? Int == 5)
        let consumers = report["consumers"] as? [[String: Any]]
        #expect(consumers?.first?["committed"] as? NSNumber == positions.last.map { NSNumber(value: $0) })
    }

    @Test("bytes that are not UTF-8 come back exactly: as themselves, and as base64 in JSON")
    func rawBytes() async throws {
        let directory = ScratchDirectory()
        let path = directory.path
        let raw = Data([0xFF, 0x00, 0xC3, 0x0A])  // one element (ff 00 c3), then the line break
        let append = try await OutboxTool.run(["queue", "append", path, "--create"], input: raw)
        #expect(append.status == 0, "\(append.stderr)")
        let json = try await outbox("queue", "consume", path, "--consumer", "j", "--json")
        let object = try #require(OutboxTool.jsonObject(json.stdoutLines.first ?? ""))
        #expect(object["base64"] as? String == Data([0xFF, 0x00, 0xC3]).base64EncodedString() && object["text"] == nil)
    }

    @Test("refusals: a commit past the newest element or going back exits 64 and changes nothing; a queue open elsewhere exits 2")
    func refusals() async throws {
        let directory = ScratchDirectory()
        let path = directory.path
        let missing = try await outbox("queue", "consume", path, "--consumer", "c")
        #expect(missing.status == 2 && missing.stderr.contains("--create"), "\(missing.stderr)")
        let append = try await outbox("queue", "append", path, "--create", "a", "b")
        let last = try #require(append.stdoutLines.last)
        // Neither a commit nor a look creates a consumer.
        let unknown = try await outbox("queue", "commit", path, "--consumer", "newbie", "--through", last)
        #expect(unknown.status == 64 && unknown.stderr.contains("no consumer newbie"), "\(unknown.stderr)")
        #expect(try await outbox("queue", "consume", path, "--consumer", "newbie", "--no-commit").status == 64)
        let none = try await outbox("queue", "stats", path, "--json")
        #expect((OutboxTool.jsonObject(none.stdoutLines.first ?? "")?["consumers"] as? [Any])?.isEmpty == true, "\(none.stdout)")
        #expect(try await outbox("queue", "consume", path, "--consumer", "c", "--max", "1").status == 0)
        #expect(try await outbox("queue", "commit", path, "--consumer", "c", "--through", last).status == 0)
        let past = try await outbox("queue", "commit", path, "--consumer", "c", "--through", String(UInt64.max))
        #expect(past.status == 64 && past.stderr.contains("newest"), "\(past.stderr)")
        let back = try await outbox("queue", "commit", path, "--consumer", "c", "--through", "1")
        #expect(back.status == 64, "\(back.stderr)")
        let stats = try await outbox("queue", "stats", path, "--json")
        let consumers = OutboxTool.jsonObject(stats.stdoutLines.first ?? "")?["consumers"] as? [[String: Any]]
        #expect((consumers?.first?["committed"] as? NSNumber)?.stringValue == last)
        // Held open by this process: the tool cannot open it.
        let held = try await DurableQueue.open(at: path)
        let locked = try await outbox("queue", "stats", path)
        #expect(locked.status == 2 && locked.stderr.contains("locked"), "\(locked.stderr)")
        try await held.close()
    }

    @Test("trim removes what every consumer committed; remove-consumer frees what it held")
    func trimAndRemove() async throws {
        let directory = ScratchDirectory()
        let path = directory.path
        let lines = (0..<3000).map { "element-\($0)-" + String(repeating: "x", count: 200) }.joined(separator: "\n")
        #expect(try await outbox("queue", "append", path, "--create", "--segment-size", "65536", input: lines).status == 0)
        _ = try await outbox("queue", "consume", path, "--consumer", "slow", "--max", "1")
        _ = try await outbox("queue", "consume", path, "--consumer", "quick")
        let held = try await outbox("queue", "trim", path, "--json")
        #expect(OutboxTool.jsonObject(held.stdoutLines.first ?? "")?["segmentsRemoved"] as? Int == 0, "\(held.stdout)")
        // A name that is no consumer's is refused: it would let the limits remove what "slow" has not read.
        let typo = try await outbox("queue", "trim", path, "--max-bytes", "0", "--held-by", "slw")
        #expect(typo.status == 64 && typo.stderr.contains("no consumer slw"), "\(typo.stderr)")
        #expect(try await outbox("queue", "trim", path, "--held-by", "").status == 64)
        let named = try await outbox("queue", "trim", path, "--max-bytes", "0", "--held-by", "slow", "--json")
        #expect(OutboxTool.jsonObject(named.stdoutLines.first ?? "")?["segmentsRemoved"] as? Int == 0, "\(named.stdout)")
        #expect(try await outbox("queue", "remove-consumer", path, "--consumer", "slow").stdout == "removed consumer slow\n")
        let trimmed = try await outbox("queue", "trim", path, "--json")
        let report = try #require(OutboxTool.jsonObject(trimmed.stdoutLines.first ?? ""), "\(trimmed.stdout) \(trimmed.stderr)")
        #expect((report["segmentsRemoved"] as? Int ?? 0) > 0, "\(report)")
        let stats = try await outbox("queue", "stats", path, "--json")
        #expect(OutboxTool.jsonObject(stats.stdoutLines.first ?? "")?["elements"] as? Int == 3000 - (report["elementsRemoved"] as? Int ?? -1))
    }

    @Test("relay ends at once when printing fails, though its input stays open")
    func relayStopsWhenPrintingFails() async throws {
        let directory = ScratchDirectory()
        let executable = try #require(OutboxTool.executable, "the outbox tool is not built")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["queue", "relay", directory.path, "--create", "--consumer", "r"]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        process.standardError = FileHandle.nullDevice
        try input.fileHandleForWriting.write(contentsOf: Data("one\ntwo\n".utf8))
        // The input is never closed: before the fix the relay waited on it
        // forever. A bound far past its work, not a measurement.
        let stopper = StopTimer(process: process, after: .seconds(120))
        let (status, _) = try await ChildProcess.waitForExit(process) { stopper.start() }
        #expect(!stopper.finish(), "the relay did not end on its own")
        #expect(status == 1, "the relay did not end with exit 1 (status \(status))")
        try? input.fileHandleForWriting.close()
    }

    @Test("relay prints each line of its input once it is queued; killed at any point, the next run prints on from the last commit")
    func relayAtLeastOnce() async throws {
        let directory = ScratchDirectory()
        let path = directory.path
        let input = (0..<5000).map { "line-\($0)" }
        let whole = input.joined(separator: "\n") + "\n"
        let seed = TestSeed.take()
        // Killed after a random moment (or not at all, when it finishes first): what it printed must
        // be a prefix of the input, and the next run must print on with no gap and nothing invented.
        let stopAfter = Duration.milliseconds(Int(seed % 800))
        let killed = try await OutboxTool.run(
            ["queue", "relay", path, "--create", "--consumer", "r", "--durability", "written"], stopAfter: stopAfter, input: Data(whole.utf8))
        let printed = killed.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        #expect(Array(input.prefix(printed.count)) == printed, "seed \(seed): the first run printed something not in order")
        // --create: the kill may have come before the queue was made.
        let again = try await outbox("queue", "relay", path, "--create", "--consumer", "r")
        #expect(again.status == 0, "\(again.stderr)")
        let more = again.stdoutLines
        if let first = more.first {
            let start = try #require(input.firstIndex(of: first), "seed \(seed): invented \(first)")
            #expect(start <= printed.count, "seed \(seed): a gap between \(printed.count) printed and a restart at \(start)")
            #expect(Array(input[start..<(start + more.count)]) == more, "seed \(seed): the second run is not in order")
        }
        if !killed.stopped {
            #expect(printed == input && more.isEmpty, "seed \(seed): an unkilled run prints everything once")
        }
    }
}
