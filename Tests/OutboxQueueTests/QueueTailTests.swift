import OutboxQueue
import Testing

@Suite("Queue: the tail")
struct QueueTailTests {
    @Test("the tail yields what is there, then each element appended after it started")
    func yieldsThenWaits() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            for i in 0..<3 { try await queue.append(bytes("e\(i)")) }
            let consumer = try await queue.consumer(named: "tail")
            let reader = Task {
                var seen: [String] = []
                for try await element in consumer.tail(batch: 2) {
                    seen.append(String(decoding: element.bytes, as: UTF8.self))
                    if seen.count == 3 { return seen }
                }
                return seen
            }
            #expect(try await reader.value == ["e0", "e1", "e2"])
            let later = Task {
                var seen: [String] = []
                for try await element in consumer.tail() {
                    seen.append(String(decoding: element.bytes, as: UTF8.self))
                    if seen.count == 5 { break }
                }
                return seen
            }
            for i in 3..<8 { try await queue.append(bytes("e\(i)"), durability: i % 2 == 0 ? .buffered : .durable) }
            #expect(try await later.value == (3..<8).map { "e\($0)" })
            try await queue.close()
        }
    }

    @Test("a tail that has yielded everything ends when the queue closes")
    func endsOnClose() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "tail")
            try await queue.append(bytes("one"))
            let (seen, seenSink) = AsyncStream.makeStream(of: String.self)
            let reader = Task {
                var count = 0
                for try await element in consumer.tail() {
                    count += 1
                    seenSink.yield(String(decoding: element.bytes, as: UTF8.self))
                }
                seenSink.finish()
                return count
            }
            var iterator = seen.makeAsyncIterator()
            #expect(await iterator.next() == "one")
            try await queue.close()
            #expect(try await reader.value == 1)
        }
    }

    @Test("cancelling a tail that has yielded everything, and reads or waits for more, ends it")
    func endsOnCancel() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "tail")
            for i in 0..<3 { try await queue.append(bytes("e\(i)")) }
            let (seen, seenSink) = AsyncStream.makeStream(of: Int.self)
            let reader = Task {
                var count = 0
                for try await _ in consumer.tail() {
                    count += 1
                    seenSink.yield(count)
                }
                return count
            }
            for await count in seen where count == 3 { break }
            reader.cancel()
            #expect(try await reader.value == 3)
            try await queue.append(bytes("later"))
            try await queue.close()
        }
    }

    @Test("a rewind inside a tail: the rest of the page is not yielded, reading starts again after the commit, nothing is skipped")
    func rewindInsideATail() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "tail")
            for i in 0..<6 { try await queue.append(bytes("e\(i)")) }
            var yielded: [String] = []
            var failedOnce = false
            for try await element in consumer.tail(batch: 10) {
                let value = String(decoding: element.bytes, as: UTF8.self)
                yielded.append(value)
                if value == "e2" && !failedOnce {
                    // Processing e2 failed: read again from the last commit (e1).
                    failedOnce = true
                    consumer.rewind()
                    continue
                }
                try await consumer.commit(through: element.position)
                if value == "e5" { break }
            }
            #expect(yielded == ["e0", "e1", "e2", "e2", "e3", "e4", "e5"])
            try await queue.close()
        }
    }
}
