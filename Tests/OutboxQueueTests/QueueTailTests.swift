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

    @Test("a tail waiting on an empty queue ends when the queue closes")
    func endsOnClose() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "tail")
            let reader = Task {
                var count = 0
                for try await _ in consumer.tail() { count += 1 }
                return count
            }
            try await queue.append(bytes("one"))
            try await queue.close()
            let count = try await reader.value
            #expect(count <= 1)
        }
    }

    @Test("cancelling the task ends the tail")
    func endsOnCancel() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let consumer = try await queue.consumer(named: "tail")
            let reader = Task {
                var count = 0
                for try await _ in consumer.tail() { count += 1 }
                return count
            }
            reader.cancel()
            #expect(try await reader.value == 0)
            try await queue.close()
        }
    }
}
