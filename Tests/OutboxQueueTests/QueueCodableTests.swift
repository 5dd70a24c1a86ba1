import Foundation
import OutboxQueue
import Testing

@Suite("Queue: Codable elements")
struct QueueCodableTests {
    struct Event: Codable, Equatable {
        var name: String
        var amount: Double
    }

    @Test("a value appended encoded reads back decoded; one that does not encode is refused and appends nothing")
    func roundTrip() async throws {
        try await withQueueDirectory { directory in
            let queue = try await DurableQueue.open(at: directory)
            let event = Event(name: "paid", amount: 12.5)
            try await queue.append(encoding: event, durability: .durable)
            let error = await #expect(throws: QueueError.self) { try await queue.append(encoding: Event(name: "bad", amount: .nan)) }
            #expect(error?.code == .invalidArgument)
            let read = try await drain(try await queue.consumer(named: "reader"))
            #expect(try read.map { try $0.decoded(as: Event.self) } == [event])
            #expect(throws: DecodingError.self) { try read[0].decoded(as: [String].self) }
            try await queue.close()
        }
    }
}
