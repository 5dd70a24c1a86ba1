import Foundation
import Outbox
import Testing

/// `recordSuccesses`: the successes of many attempts in one write. Every
/// store must record exactly what `recordSuccess` one by one would, and
/// refuse the same entries with the same errors.
@Suite("Batched successes")
struct BatchedSuccessTests {
    @Test("a batch records every entry in flight and refuses the others, each with its own error", arguments: StoreKind.allCases)
    func batchRecordsWhatItMay(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let first = try await subject.store.add(request())
        let second = try await subject.store.add(request())
        let pending = try await subject.store.add(request())
        let tooLong = try await subject.store.add(request())
        for id in [first, second, tooLong] { _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30)) }
        let unknown = OutboxEntry.ID()
        let refused = try await subject.store.recordSuccesses(
            [
                OutboxSuccess(id: first, serverID: "srv-1"), OutboxSuccess(id: second, serverID: nil),
                OutboxSuccess(id: pending, serverID: "srv-3"), OutboxSuccess(id: unknown, serverID: "srv-4"),
                OutboxSuccess(id: tooLong, serverID: String(repeating: "x", count: OutboxLimits.maximumServerIDBytes + 1)),
            ], at: now)
        #expect(Set(refused.keys) == [pending, unknown, tooLong])
        #expect(refused[pending]?.code == .invalidTransition)
        #expect(refused[unknown]?.code == .notFound)
        #expect(refused[tooLong]?.code == .invalidArgument)

        try await subject.reopen(now: now)
        #expect(try await subject.store.completion(of: first)?.serverID == "srv-1")
        #expect(try await subject.store.completion(of: second) != nil)
        #expect(try await subject.store.completion(of: second)?.serverID == nil)
        #expect(try await subject.store.entry(first) == nil)
        #expect(try await subject.store.status(pending) == .pending)
        #expect(try await subject.store.completion(of: pending) == nil)
        // Refused while in flight: still in flight (a reopen puts it back pending).
        #expect(try await subject.store.completion(of: tooLong) == nil)
        #expect(try await subject.store.entry(tooLong) != nil)
        #expect(try await subject.store.summary().total == 2)
        try await subject.close()
    }

    @Test("an empty batch, and a batch of only refused entries, write nothing", arguments: StoreKind.allCases)
    func nothingToRecord(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let id = try await subject.store.add(request())
        #expect(try await subject.store.recordSuccesses([], at: Date()).isEmpty)
        let refused = try await subject.store.recordSuccesses([OutboxSuccess(id: id, serverID: nil)], at: Date())
        #expect(refused[id]?.code == .invalidTransition)
        #expect(try await subject.store.status(id) == .pending)
        try await subject.close()
    }
}
