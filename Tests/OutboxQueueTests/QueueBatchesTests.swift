import OutboxQueue
import Testing

@Suite("Queue: batches")
struct QueueBatchesTests {
    @Test("batches yield what is there at once, up to max, then wait for each later append")
    func yieldsWhatIsThereThenWaits() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            try await queue.append(contentsOf: (0..<5).map { bytes("e\($0)") })
            let consumer = try await queue.consumer(named: "batches")
            let (seen, sink) = AsyncStream.makeStream(of: [String].self)
            let reader = Task {
                for try await batch in consumer.batches(max: 3) {
                    sink.yield(batch.map { String(decoding: $0.bytes, as: UTF8.self) })
                }
                sink.finish()
            }
            var batches = seen.makeAsyncIterator()
            #expect(await batches.next() == ["e0", "e1", "e2"])
            #expect(await batches.next() == ["e3", "e4"])
            // Waiting at the end: the next append arrives as a batch of its own.
            try await queue.append(bytes("e5"), durability: .durable)
            #expect(await batches.next() == ["e5"])
            try await queue.close()
            try await reader.value
            #expect(await batches.next() == nil)
        }
    }

    @Test("a commit through a batch's last position is where a new consumer object resumes")
    func commitThroughBatch() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            try await queue.append(contentsOf: (0..<4).map { bytes("e\($0)") })
            let consumer = try await queue.consumer(named: "batches")
            var iterator = consumer.batches(max: 2).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            try await consumer.commit(through: try #require(first.last).position)
            try await queue.close()

            let reopened = try await DurableQueue.open(at: directory)
            let again = try await reopened.consumer(named: "batches")
            var resumed = again.batches().makeAsyncIterator()
            #expect(try await resumed.next()?.map { String(decoding: $0.bytes, as: UTF8.self) } == ["e2", "e3"])
            try await reopened.close()
        }
    }

    @Test("cancelling batches that wait at the end ends them")
    func endsOnCancel() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "batches")
            let reader = Task {
                var count = 0
                for try await _ in consumer.batches() { count += 1 }
                return count
            }
            reader.cancel()
            #expect(try await reader.value == 0)
            try await queue.close()
        }
    }
}
