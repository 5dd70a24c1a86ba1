import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@Suite("Round trip")
struct RoundTripTests {
    @Test("values survive close and reopen across segment rolls, at every durability")
    func roundTripAcrossRolls() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var expected: [LogKey: [UInt8]] = [:]
        for i in 0..<300 {
            let key = LogKey("key-\(i % 120)")
            let value = [UInt8].pattern(10 + i % 200, seed: i)
            let durability = Durability.allCases[i % 3]
            try await log.put(key, value, durability: durability)
            expected[key] = value
        }
        for i in stride(from: 0, to: 120, by: 7) {
            let key = LogKey("key-\(i)")
            let sequence = try await log.delete(key, durability: .written)
            #expect(sequence != nil)
            expected[key] = nil
        }
        #expect(log.statistics.segments > 3)
        for (key, value) in expected {
            #expect(try await log.get(key)?.value == value)
        }
        try await log.close()

        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        #expect(reopened.recoveryReport.isClean)
        #expect(reopened.recoveryReport.liveKeys == expected.count)
        #expect(Set(reopened.keys) == Set(expected.keys))
        for (key, value) in expected {
            #expect(try await reopened.get(key)?.value == value)
        }
        let scanned = try await reopened.entries(after: 0, limit: 10_000)
        #expect(scanned.count == expected.count)
        #expect(scanned.map(\.sequence) == scanned.map(\.sequence).sorted())
        try await reopened.close()
    }

    @Test("recovery asks the file system to read ahead every segment, whole, and still reads every record")
    func recoveryReadsAhead() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 0..<200 { try await log.put(LogKey("key-\(i)"), .pattern(40, seed: i), durability: .buffered) }
        try await log.close()
        let files = LogFiles(directory: directory.path)
        let sizes = files.segments.map { Int64(files.read($0).count) }
        #expect(sizes.count > 3)

        let hooked = HookedFileSystem(base: PosixFileSystem()) { _ in }
        var configuration = smallSegments()
        configuration.fileSystem = hooked
        let reopened = try await OutboxLog.open(at: directory.path, configuration: configuration)
        #expect(reopened.recoveryReport.liveKeys == 200)
        let advice = hooked.readAdvice.withLock { $0 }
        #expect(advice.map(\.offset) == Array(repeating: 0, count: sizes.count))
        #expect(advice.map(\.length).sorted() == sizes.sorted())
        #expect(Set(advice.map(\.descriptor)).count == sizes.count)
        try await reopened.close()
    }

    @Test("a batch get reads every key as single gets do, buffered records included, missing keys as nil")
    func batchGet() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var keys: [LogKey] = []
        for i in 0..<80 {
            let key = LogKey("key-\(i)")
            keys.append(key)
            // Segment rolls, annotations, and the last records still in memory.
            try await log.put(key, .pattern(30 + i, seed: i), durability: i < 60 ? .written : .buffered)
            if i % 3 == 0 { try await log.annotate(key, .pattern(5, seed: -i), durability: .buffered) }
        }
        _ = try await log.delete(keys[7], durability: .buffered)
        let asked = keys + [LogKey("never-written")] + keys.reversed()
        let batch = try await log.get(asked)
        #expect(batch.count == asked.count)
        for (key, entry) in zip(asked, batch) {
            #expect(entry == (try await log.get(key)), "\(key)")
        }
        #expect(batch[7] == nil)
        #expect(batch[80] == nil)
        #expect(batch[3]?.annotation?.payload == .pattern(5, seed: -3))
        #expect(try await log.get([]).isEmpty)
        try await log.close()
    }

    @Test("sequence numbers increase across reopen")
    func sequencesIncrease() async throws {
        let directory = TemporaryDirectory()
        var last: UInt64 = 0
        for round in 0..<3 {
            let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
            for i in 0..<10 {
                let sequence = try await log.put(LogKey("k\(round)-\(i)"), [1, 2, 3], durability: .written)
                #expect(sequence > last)
                last = sequence
            }
            try await log.close()
        }
    }
}

@Suite("Submit")
struct SubmitTests {
    @Test("submitted batches keep call order, and awaiting the last ticket makes all of them durable")
    func pipelinedSubmits() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var tickets: [LogTicket] = []
        for i in 0..<500 {
            tickets.append(try log.submit([.value(LogKey("k\(i % 50)"), .pattern(40, seed: i))]))
        }
        #expect(tickets.map(\.sequence) == tickets.map(\.sequence).sorted())
        try await tickets.last!.wait(for: .durable)
        #expect(log.statistics.durableSequence >= tickets.last!.sequence)
        try await log.close()
        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for i in 450..<500 { #expect(try await reopened.get(LogKey("k\(i % 50)"))?.value == .pattern(40, seed: i)) }
        try await reopened.close()
    }

    @Test("submit validates like append and writes nothing on bad input")
    func submitValidates() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        #expect(throws: OutboxLogError.self) { _ = try log.submit([.annotation("nothing", [1])]) }
        #expect(log.statistics.nextSequence == 1)
        try await log.close()
    }
}
