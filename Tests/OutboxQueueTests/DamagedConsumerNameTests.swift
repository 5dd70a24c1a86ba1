import OutboxLog
import OutboxQueue
import SystemPackage
import Testing

@Suite("Queue: a consumer whose stored name is not UTF-8")
struct DamagedConsumerNameTests {
    @Test("a consumer stored under bytes that are not UTF-8 is listed, and removed by the name it is listed under")
    func removableByListedName() async throws {
        try await withQueueDirectory { directory in
            var queue = try await DurableQueue.open(at: directory)
            try await queue.append(contentsOf: (0..<3).map { bytes("e\($0)") })
            try await queue.close()
            // A crafted or damaged consumers' log: a position stored under
            // the bytes FF 61, which no String encodes to.
            let offsets = try await OutboxLog.open(at: directory.appending("consumers"))
            try await offsets.put(LogKey([0xFF, 0x61]), [1] + [UInt8](repeating: 0, count: 8), durability: .durable)
            try await offsets.close()

            queue = try await DurableQueue.open(at: directory)
            let listed = try await queue.statistics().consumers.map(\.name)
            #expect(listed == ["\u{FFFD}a"])
            #expect(try await queue.removeConsumer(named: "\u{FFFD}a"))
            #expect(try await queue.statistics().consumers.isEmpty)
            #expect(try await queue.removeConsumer(named: "\u{FFFD}a") == false)
            try await queue.close()
        }
    }
}
