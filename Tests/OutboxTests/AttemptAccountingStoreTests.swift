import Foundation
import Outbox
import Testing

/// The store's side of the dispatcher's attempt rules: attempts given back,
/// the server's first answer kept (across reopens), expired leases reclaimed.
@Suite("Attempt accounting in the store")
struct AttemptAccountingStoreTests {
    @Test("an attempt not counted is given back and never quarantines; a counted one still does", arguments: StoreKind.allCases)
    func uncountedAttempts(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let store = subject.store
        let id = try await store.add(request(maxAttempts: 1))
        let now = Date()
        for round in 0..<5 {
            let claim = try await store.claimDue(at: now.addingTimeInterval(Double(round)), limit: 1, lease: .seconds(60)) { _ in true }
            #expect(claim.entries.map(\.id) == [id])
            #expect(claim.entries.first?.attempts == 1)
            let (status, _) = try await store.recordFailure(
                id, OutboxFailure(.notSent, message: "refused"), retryAt: now.addingTimeInterval(Double(round) + 1),
                countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: nil)
            #expect(status == .waitingToRetry)
            #expect(try await store.entry(id)?.attempts == 0)
        }
        _ = try await store.claimDue(at: now.addingTimeInterval(10), limit: 1, lease: .seconds(60)) { _ in true }
        let (status, _) = try await store.recordFailure(
            id, OutboxFailure(.transient, httpStatus: 503, message: "HTTP 503"), retryAt: now.addingTimeInterval(11), countsAsAttempt: true, serverAnsweredAt: now, outcomeUnknownAt: nil)
        #expect(status == .quarantined)
        try await subject.close()
    }

    @Test("the server's first answer is kept, not moved by later answers, and survives a reopen", arguments: StoreKind.allCases)
    func firstAnswerIsKept(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let id = try await subject.store.add(request())
        let first = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try await subject.store.claimDue(at: first, limit: 1, lease: .seconds(60)) { _ in true }
        _ = try await subject.store.recordFailure(
            id, OutboxFailure(.transient, message: "refused"), retryAt: first, countsAsAttempt: false, serverAnsweredAt: nil, outcomeUnknownAt: nil)
        #expect(try await subject.store.entry(id)?.firstAnswerAt == nil)
        _ = try await subject.store.claimDue(at: first, limit: 1, lease: .seconds(60)) { _ in true }
        _ = try await subject.store.recordFailure(
            id, OutboxFailure(.transient, httpStatus: 503, message: "HTTP 503"), retryAt: first.addingTimeInterval(5), countsAsAttempt: true,
            serverAnsweredAt: first, outcomeUnknownAt: nil)
        _ = try await subject.store.claimDue(at: first.addingTimeInterval(5), limit: 1, lease: .seconds(60)) { _ in true }
        _ = try await subject.store.recordFailure(
            id, OutboxFailure(.transient, httpStatus: 503, message: "HTTP 503"), retryAt: first.addingTimeInterval(10), countsAsAttempt: true,
            serverAnsweredAt: first.addingTimeInterval(5), outcomeUnknownAt: nil)
        #expect(try await subject.store.entry(id)?.firstAnswerAt == first)
        try await subject.reopen(now: first.addingTimeInterval(20))
        let reopened = try #require(try await subject.store.entry(id))
        #expect(reopened.firstAnswerAt == first)
        #expect(reopened.lastFailure?.httpStatus == 503)
        try await subject.close()
    }

    @Test("leases that expired are reclaimed while the store is open; running ones are not", arguments: StoreKind.allCases)
    func reclaimExpiredLeases(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let store = subject.store
        let stuck = try await store.add(request())
        let running = try await store.add(request())
        let now = Date()
        _ = try await store.claimDue(at: now, limit: 1, lease: .seconds(10)) { _ in true }
        _ = try await store.claimDue(at: now.addingTimeInterval(5), limit: 1, lease: .seconds(10)) { _ in true }
        #expect(try await store.reclaimExpiredLeases(at: now.addingTimeInterval(9)).isEmpty)
        #expect(try await store.reclaimExpiredLeases(at: now.addingTimeInterval(10)) == [stuck])
        let entry = try #require(try await store.entry(stuck))
        #expect(entry.status == .pending)
        #expect(entry.attempts == 1)
        #expect(entry.lastFailure?.cause == .leaseExpired)
        #expect(try await store.status(running) == .inFlight)
        let again = try await store.claimDue(at: now.addingTimeInterval(10), limit: 1, lease: .seconds(10)) { _ in true }
        #expect(again.entries.map(\.id) == [stuck])
        try await subject.close()
    }
}
