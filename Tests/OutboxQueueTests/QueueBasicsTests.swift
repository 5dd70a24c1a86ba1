import OutboxLog
import OutboxLogTesting
import OutboxQueue
import SystemPackage
import Testing

@Suite("Queue: append, read, commit")
struct QueueBasicsTests {
    @Test("elements come back in order, a page at a time, with increasing positions")
    func inOrderInPages() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            var positions: [QueuePosition] = []
            for i in 0..<10 { positions.append(try await queue.append(bytes("e\(i)"))) }
            let batchEnd = try await queue.append(contentsOf: [bytes("b0"), bytes("b1"), bytes("b2")], durability: .durable)
            #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 })
            #expect(positions.last! < batchEnd)
            let consumer = try await queue.consumer(named: "reader")
            #expect(consumer.committed == nil)
            let first = try await consumer.next(max: 4)
            #expect(text(first) == ["e0", "e1", "e2", "e3"])
            #expect(first.map(\.position) == Array(positions.prefix(4)))
            let rest = try await drain(consumer, page: 3)
            #expect(text(rest) == (4..<10).map { "e\($0)" } + ["b0", "b1", "b2"])
            #expect(rest.last?.position == batchEnd)
            #expect(try await consumer.next().isEmpty, "a consumer at the end reads nothing and does not wait")
            try await queue.close()
        }
    }

    @Test("after a reopen a consumer reads again from its last commit: read and not committed comes again")
    func resumesAfterCommit() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<6 { try await queue.append(bytes("e\(i)")) }
            let consumer = try await queue.consumer(named: "c")
            let read = try await consumer.next(max: 4)
            try await consumer.commit(through: read[1].position)
            try await queue.close()

            let reopened = try await DurableQueue.open(at: directory)
            let again = try await reopened.consumer(named: "c")
            #expect(again.committed == read[1].position)
            #expect(text(try await drain(again)) == ["e2", "e3", "e4", "e5"])
            try await reopened.close()
        }
    }

    @Test("rewind reads again from the last commit, without a reopen")
    func rewind() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<5 { try await queue.append(bytes("e\(i)")) }
            let consumer = try await queue.consumer(named: "c")
            let read = try await consumer.next(max: 2)
            try await consumer.commit(through: read[0].position, durability: .written)
            _ = try await drain(consumer)
            consumer.rewind()
            #expect(consumer.position == read[0].position)
            #expect(text(try await drain(consumer)) == ["e1", "e2", "e3", "e4"])
            try await queue.close()
        }
    }

    @Test("a commit that would go back, or past the newest element, is refused and changes nothing")
    func commitsAreChecked() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<3 { try await queue.append(bytes("e\(i)")) }
            let consumer = try await queue.consumer(named: "c")
            let read = try await consumer.next()
            try await consumer.commit(through: read[1].position)
            await #expect(throws: QueueError.self) { try await consumer.commit(through: read[0].position) }
            let beyond = QueuePosition(rawValue: read[2].position.rawValue + 1_000)
            let refused = await #expect(throws: QueueError.self) { try await consumer.commit(through: beyond) }
            #expect(refused?.code == .invalidArgument)
            #expect(consumer.committed == read[1].position)
            try await queue.close()
            let reopened = try await DurableQueue.open(at: directory)
            #expect(try await reopened.consumer(named: "c").committed == read[1].position)
            try await reopened.close()
        }
    }

    @Test("a consumer that starts at the end skips what was there, and keeps that start across a reopen")
    func startAtEnd() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<3 { try await queue.append(bytes("old\(i)"), durability: .buffered) }
            let late = try await queue.consumer(named: "late", startingAt: .end)
            let early = try await queue.consumer(named: "early")
            try await queue.append(bytes("new"))
            #expect(text(try await drain(late)) == ["new"])
            #expect(text(try await drain(early)) == ["old0", "old1", "old2", "new"])
            try await queue.close()
            let reopened = try await DurableQueue.open(at: directory)
            #expect(text(try await drain(try await reopened.consumer(named: "late", startingAt: .oldest))) == ["new"])
            try await reopened.close()
        }
    }

    @Test("first-time calls for one name at once share one creation: one consumer, and the start it reports is the one kept")
    func concurrentCreation() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<3 { try await queue.append(bytes("e\(i)")) }
            async let first = queue.consumer(named: "x", startingAt: .end)
            async let second = queue.consumer(named: "x", startingAt: .oldest)
            let (a, b) = try await (first, second)
            #expect(a === b)
            let start = a.committed
            try await queue.close()
            let reopened = try await DurableQueue.open(at: directory)
            #expect(try await reopened.consumer(named: "x").committed == start)
            try await reopened.close()
        }
    }

    @Test("bad names, an empty batch, an element over the largest record and a zero page are refused; the queue goes on")
    func refusals() async throws {
        try await withQueueDirectory { directory in
            var configuration = DurableQueue.Configuration()
            configuration.elements.maximumRecordSize = 4096
            let queue = try await DurableQueue.open(at: directory, configuration: configuration)
            for name in ["", String(repeating: "n", count: 256)] {
                let error = await #expect(throws: QueueError.self) { try await queue.consumer(named: name) }
                #expect(error?.code == .invalidArgument)
            }
            let empty = await #expect(throws: QueueError.self) { try await queue.append(contentsOf: []) }
            #expect(empty?.code == .invalidArgument)
            let large = await #expect(throws: QueueError.self) { try await queue.append([UInt8](repeating: 1, count: 8192)) }
            #expect(large?.code == .invalidArgument)
            let consumer = try await queue.consumer(named: String(repeating: "n", count: 255))
            let zero = await #expect(throws: QueueError.self) { try await consumer.next(max: 0) }
            #expect(zero?.code == .invalidArgument)
            try await queue.append(bytes("after"))
            #expect(text(try await drain(consumer)) == ["after"])
            try await queue.close()
        }
    }

    @Test("a committed position that does not read back is damage for that consumer alone")
    func damagedCommit() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            try await queue.append(bytes("e0"))
            _ = try await queue.consumer(named: "good")
            try await queue.close()
            // Written by hand where the queue keeps its consumers.
            let consumers = try await OutboxLog.open(at: directory.appending("consumers"))
            try await consumers.put(LogKey("bad"), [1, 2, 3], durability: .durable)
            try await consumers.close()

            let reopened = try await DurableQueue.open(at: directory)
            let damaged = await #expect(throws: QueueError.self) { try await reopened.consumer(named: "bad") }
            #expect(damaged?.code == .damaged)
            #expect(damaged?.message.contains("bad") == true)
            #expect(text(try await drain(try await reopened.consumer(named: "good"))) == ["e0"])
            try await reopened.close()
        }
    }

    @Test("names are their UTF-8 bytes: two spellings of café Swift calls equal are two consumers, in memory as on disk")
    func namesAreBytes() async throws {
        try await withQueueDirectory { directory in
            let composed = "caf\u{E9}"
            let decomposed = "cafe\u{301}"
            #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8))
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<3 { try await queue.append(bytes("e\(i)")) }
            let first = try await queue.consumer(named: composed)
            let second = try await queue.consumer(named: decomposed)
            #expect(first !== second)
            let read = try await first.next(max: 2)
            try await first.commit(through: read[1].position)
            try await queue.close()
            let reopened = try await DurableQueue.open(at: directory)
            #expect(try await reopened.consumer(named: composed).committed == read[1].position)
            #expect(try await reopened.consumer(named: decomposed).committed == nil)
            try await reopened.close()
        }
    }

    @Test(
        "a batch larger than the bound on bytes waiting to be written is appended whole, behind a buffered append",
        .timeLimit(.minutes(2)))  // a hang guard: an append that never gets room fails instead of stalling the run
    func batchLargerThanThePendingBound() async throws {
        try await withQueueDirectory { directory in
            var configuration = DurableQueue.Configuration()
            configuration.elements.groupCommitLimit = 64 << 10
            configuration.elements.maximumPendingBytes = 64 << 10
            let queue = try await DurableQueue.open(at: directory, configuration: configuration)
            try await queue.append([UInt8](repeating: 7, count: 1024), durability: .buffered)
            // 5,000 one-byte elements: their frames, not their payloads, are ~180 KiB.
            let batch = (0..<5_000).map { [UInt8(truncatingIfNeeded: $0)] }
            try await queue.append(contentsOf: batch, durability: .written)
            let consumer = try await queue.consumer(named: "c")
            let all = try await drain(consumer, page: 1_000)
            #expect(all.count == 5_001)
            #expect(all.dropFirst().map(\.bytes) == batch)
            try await queue.close()
        }
    }

    @Test("a commit whose sync fails throws and moves nothing: committed and a rewind stay where the last commit was")
    func failedCommitChangesNothing() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await DurableQueue.open(at: QueuePowerLossTests.directory, configuration: QueuePowerLossTests.configuration(disk))
        for i in 0..<4 { try await queue.append(bytes("e\(i)"), durability: .durable) }
        let consumer = try await queue.consumer(named: "c")
        let read = try await consumer.next()
        try await consumer.commit(through: read[0].position)
        _ = disk.faults.install(.fromNthCall(1, of: .synchronize, paths: .under(QueuePowerLossTests.directory.appending("consumers"))))
        let failed = await #expect(throws: QueueError.self) { try await consumer.commit(through: read[2].position) }
        #expect(failed?.code == .log)
        #expect(consumer.committed == read[0].position, "a failed commit moved the committed position")
        consumer.rewind()
        #expect(text(try await drain(consumer)) == ["e1", "e2", "e3"], "a rewind after the failed commit skipped elements")
        _ = try? await queue.close()
    }

    @Test("after close, calls throw closed")
    func closed() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "c")
            try await queue.close()
            let append = await #expect(throws: QueueError.self) { try await queue.append(bytes("x")) }
            #expect(append?.code == .closed)
            let read = await #expect(throws: QueueError.self) { try await consumer.next() }
            #expect(read?.code == .closed)
            let again = await #expect(throws: QueueError.self) { try await queue.consumer(named: "c") }
            #expect(again?.code == .closed, "a cached consumer was handed out by a closed queue")
        }
    }
}
