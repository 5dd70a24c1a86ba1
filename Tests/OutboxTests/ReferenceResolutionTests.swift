import Foundation
import OutboxLocking
import Testing

import Outbox

/// Resolving a delivery's `local:` references asks the store what it knows
/// from memory: whether the referenced write was delivered (its
/// completion) or is still queued (its state), never by reading a body.
@Suite("local: references resolved from memory")
struct ReferenceResolutionTests {
    @Test("a reference to a write still queued is answered by its state: no body is read")
    func queuedReferenceReadsNoBody() async throws {
        let store = BodyCountingStore(base: InMemoryOutboxStore(partition: "u", configuration: quietConfiguration()))
        let handler = ScriptedHandler()
        handler.script("parent", .transient(reason: "busy", httpStatus: 503, retryAfter: .seconds(60)))
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 1
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [Note.type: handler], configuration: configuration, clock: ManualOutboxClock())
        let parent = try await store.add(OutboxEnqueueRequest(type: Note.type, method: "POST", endpoint: "/notes", payload: Array("parent".utf8)))
        // No declared dependency: the reference alone holds the child back.
        let child = try await store.add(OutboxEnqueueRequest(
            type: Note.type, method: "POST", endpoint: "/notes/\(parent.localReference)", payload: Array("child".utf8),
            scope: "another"))
        await dispatcher.flush()
        #expect(handler.deliveries(of: child).isEmpty)
        let entry = try #require(try await store.base.entry(child))
        #expect(entry.lastFailure?.cause == .unresolvedReference, "\(entry.lastFailure.map(String.init(describing:)) ?? "none")")
        #expect(store.bodiesRead(of: parent) == 0, "the referenced write's body was read to learn that it exists")
    }
}

/// A store that counts the bodies read (`entry(_:)`) of each entry, and
/// answers `state(of:)` from the store's memory as the real stores do.
private final class BodyCountingStore: ForwardingOutboxStore {
    let base: InMemoryOutboxStore
    private let reads = Locked<[OutboxEntry.ID: Int]>([:])
    init(base: InMemoryOutboxStore) { self.base = base }
    var wrapped: any OutboxStore { base }

    func bodiesRead(of id: OutboxEntry.ID) -> Int { reads.withLock { $0[id] ?? 0 } }

    func entry(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntry? {
        reads.withLock { $0[id, default: 0] += 1 }
        return try await base.entry(id)
    }
    func state(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxEntryState? { try await base.state(of: id) }
    func claimDue(at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool) async throws(OutboxError) -> OutboxClaim {
        try await base.claimDue(at: now, limit: limit, lease: lease, accepting: accepting)
    }
    func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        try await base.recordFailure(
            id, failure, retryAt: retryAt, countsAsAttempt: countsAsAttempt, serverAnsweredAt: serverAnsweredAt,
            outcomeUnknownAt: outcomeUnknownAt)
    }
    func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] { try await base.reclaimExpiredLeases(at: now) }
}
