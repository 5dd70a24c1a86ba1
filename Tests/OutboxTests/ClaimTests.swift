import Foundation
import Outbox
import Testing

/// `claimDue`: due entries handed out for delivery, in flight at once.
@Suite("Claiming due entries")
struct ClaimTests {
    @Test("a claim takes due entries best first, puts them in flight with the attempt counted, once", arguments: StoreKind.allCases)
    func claimOrderAndState(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let low = try await subject.store.add(request(priority: -1))
        let a1 = try await subject.store.add(request(scope: "a"))
        let a2 = try await subject.store.add(request(scope: "a"))
        let urgent = try await subject.store.add(request(priority: 3))
        let first = try await subject.claim(at: now, limit: 3)
        #expect(first.entries.map(\.id) == [urgent, a1, low])
        for entry in first.entries {
            #expect(entry.status == .inFlight)
            #expect(entry.attempts == 1)
            #expect(abs(entry.nextAttemptAt.timeIntervalSince(now.addingTimeInterval(30))) < 0.01)
            #expect(entry.payload == Array("{}".utf8))
        }
        // In flight: not handed out again; a2 waits behind a1 in its scope.
        #expect(try await subject.claim(at: now, limit: 10).entries.isEmpty)
        try await subject.store.recordSuccess(a1, serverID: nil, at: now)
        #expect(try await subject.claim(at: now, limit: 10).entries.map(\.id) == [a2])

        // A crash leaves claimed entries pending again, the attempt counted.
        try await subject.reopen(now: now)
        if kind == .log {
            #expect(try await subject.store.entry(urgent)?.status == .pending)
            #expect(try await subject.store.entry(urgent)?.attempts == 1)
        }
        try await subject.close()
    }

    @Test("types that are not accepted stay pending and are reported, without hiding the others", arguments: StoreKind.allCases)
    func unacceptedTypes(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let orphan = try await subject.store.add(request(type: "removed_feature", priority: 9))
        let post = try await subject.store.add(request(type: "post"))
        let claim = try await subject.store.claimDue(at: Date(), limit: 1, lease: .seconds(30)) { $0 == "post" }
        #expect(claim.entries.map(\.id) == [post])
        #expect(claim.unaccepted == [orphan: "removed_feature"])
        #expect(try await subject.store.entry(orphan)?.status == .pending)
        #expect(try await subject.store.entry(orphan)?.attempts == 0)
        #expect(try await subject.store.dueIDs() == [orphan])
        try await subject.close()
    }

    @Test("the protocol's default claim (for other stores) behaves like the built-in ones")
    func defaultImplementation() async throws {
        let store = DefaultClaimStore(InMemoryOutboxStore())
        let orphan = try await store.add(request(type: "other", priority: 1))
        let a1 = try await store.add(request(scope: "a"))
        _ = try await store.add(request(scope: "a"))
        let claim = try await store.claimDue(at: Date(), limit: 5, lease: .seconds(30)) { $0 == "post" }
        #expect(claim.entries.map(\.id) == [a1])
        #expect(claim.entries.first?.status == .inFlight)
        #expect(claim.unaccepted == [orphan: "other"])
    }
}

extension StoreUnderTest {
    func claim(at now: Date, limit: Int) async throws -> OutboxClaim {
        try await store.claimDue(at: now, limit: limit, lease: .seconds(30)) { _ in true }
    }
}

/// A store that forwards everything but `claimDue`, so the protocol
/// extension's default runs.
private final class DefaultClaimStore: OutboxStore {
    let base: any OutboxStore
    init(_ base: any OutboxStore) { self.base = base }

    var partition: String { base.partition }
    func enqueue(_ request: OutboxEnqueueRequest) async throws(OutboxError) -> OutboxEnqueueResult {
        try await base.enqueue(request)
    }
    func dueEntries(at now: Date, limit: Int) async throws(OutboxError) -> [OutboxEntry] {
        try await base.dueEntries(at: now, limit: limit)
    }
    func nextDueDate() async throws(OutboxError) -> Date? { try await base.nextDueDate() }
    func beginAttempt(_ id: OutboxEntry.ID, at now: Date, lease: Duration) async throws(OutboxError) -> OutboxEntry {
        try await base.beginAttempt(id, at: now, lease: lease)
    }
    func recordSuccess(_ id: OutboxEntry.ID, serverID: String?, at now: Date) async throws(OutboxError) {
        try await base.recordSuccess(id, serverID: serverID, at: now)
    }
    func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await base.recordFailure(
            id, failure, retryAt: retryAt, countsAsAttempt: countsAsAttempt, serverAnsweredAt: serverAnsweredAt,
            outcomeUnknownAt: outcomeUnknownAt)
    }
    func quarantine(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) -> OutboxCascade {
        try await base.quarantine(id, failure)
    }
    func markConflict(_ id: OutboxEntry.ID, _ failure: OutboxFailure) async throws(OutboxError) {
        try await base.markConflict(id, failure)
    }
    func retry(_ id: OutboxEntry.ID, at now: Date) async throws(OutboxError) -> OutboxCascade {
        try await base.retry(id, at: now)
    }
    func discard(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCascade { try await base.discard(id) }
    func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry? { try await base.entry(id) }
    func entries(matching filter: OutboxFilter) async throws(OutboxError) -> [OutboxEntry] {
        try await base.entries(matching: filter)
    }
    func summary() async throws(OutboxError) -> OutboxSummary { try await base.summary() }
    func dependents(of id: OutboxEntry.ID) async throws(OutboxError) -> [OutboxEntry.ID] {
        try await base.dependents(of: id)
    }
    func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion? {
        try await base.completion(of: id)
    }
    func clear() async throws(OutboxError) { try await base.clear() }
    func prune(at now: Date) async throws(OutboxError) { try await base.prune(at: now) }
    func close() async throws(OutboxError) { try await base.close() }
}
