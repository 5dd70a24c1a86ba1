import Foundation
import Testing

@testable import Outbox

/// `explain(_:at:)`: every state a write can wait in has a reason, named as
/// a claim would meet it, with what would move it.
@Suite("Explaining why a write waits")
struct ExplainTests {
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The reason a store gives for an entry in `status` that nothing else
    /// holds. A switch without `default`: a new status does not compile
    /// until it has a reason here.
    private static func expectedReason(for status: OutboxStatus) -> String {
        switch status {
        case .pending: "due"
        case .inFlight: "sending"
        case .waitingToRetry: "retryAt"
        case .quarantined: "quarantined"
        case .conflict: "conflict"
        case .succeeded: "delivered"
        }
    }

    /// Puts a fresh entry in `status` through the store's API.
    private static func entry(
        in status: OutboxStatus, of store: any OutboxStore, scope: String? = nil
    ) async throws -> OutboxEntry.ID {
        let id = try await store.add(request(scope: scope))
        let failure = OutboxFailure(.transient, httpStatus: 503)
        switch status {
        case .pending: break
        case .inFlight: _ = try await store.beginAttempt(id, at: now, lease: .seconds(30))
        case .waitingToRetry:
            _ = try await store.beginAttempt(id, at: now, lease: .seconds(30))
            _ = try await store.recordFailure(id, failure, retryAt: now.addingTimeInterval(60))
        case .quarantined: _ = try await store.quarantine(id, OutboxFailure(.permanent, httpStatus: 422))
        case .conflict:
            _ = try await store.beginAttempt(id, at: now, lease: .seconds(30))
            try await store.markConflict(id, OutboxFailure(.conflict, httpStatus: 409))
        case .succeeded: try await store.deliver(id, serverID: "srv-1", at: now)
        }
        return id
    }

    @Test("every status has a reason and a sentence, in both stores and in the protocol's default", arguments: ExplainedStore.allCases)
    func everyStatusIsExplained(_ kind: ExplainedStore) async throws {
        for status in OutboxStatus.allCases {
            let subject = try await kind.make()
            let id = try await Self.entry(in: status, of: subject.store)
            let why = try await subject.store.explain(id, at: Self.now)
            #expect(why.status == status, "\(status)")
            #expect(why.reason.name == Self.expectedReason(for: status), "\(status): \(why)")
            #expect(!why.description.isEmpty)
            if status != .succeeded { #expect(why.type == "post") }  // a delivered entry may be its completion alone
            try await subject.close()
        }
    }

    @Test("what a write waits for: its retry time, its parent, nothing; an unknown id says so", arguments: ExplainedStore.allCases)
    func waitingReasons(_ kind: ExplainedStore) async throws {
        let subject = try await kind.make()
        let store = subject.store
        // In a scope of its own: unscoped, it would head the unscoped writes' queue.
        let retrying = try await Self.entry(in: .waitingToRetry, of: store, scope: "retrying")
        let later = Self.now.addingTimeInterval(60)
        let waiting = try await store.explain(retrying, at: Self.now)
        #expect(waiting.reason == .retryAt(later))
        #expect(waiting.remedy == .waitUntil(later))
        #expect(waiting.nextAttemptAt == later)
        #expect(waiting.lastFailure?.httpStatus == 503)
        #expect(try await store.explain(retrying, at: later).reason == .due)

        let parent = try await store.add(request())
        let child = try await store.add(request(dependencies: [parent]))
        let blocked = try await store.explain(child, at: Self.now)
        #expect(blocked.reason == .waitingForParent(parent, parentStatus: .pending))
        #expect(blocked.remedy == .waitFor(parent))
        #expect(blocked.waitsFor == parent)
        try await store.deliver(parent, at: Self.now)
        #expect(try await store.explain(child, at: Self.now).reason == .due)

        let unknown = OutboxEntry.ID()
        #expect(try await store.explain(unknown, at: Self.now) == OutboxExplanation(id: unknown, status: nil, reason: .unknown))
        try await subject.close()
    }

    @Test("a write behind a quarantined parent: quarantined with it, and the remedy is to retry the parent", arguments: ExplainedStore.allCases)
    func quarantinedParent(_ kind: ExplainedStore) async throws {
        let subject = try await kind.make()
        let store = subject.store
        let parent = try await store.add(request())
        let child = try await store.add(request(dependencies: [parent]))
        _ = try await store.quarantine(parent, OutboxFailure(.permanent, httpStatus: 400))
        let why = try await store.explain(child, at: Self.now)
        #expect(why.reason == .quarantined)
        #expect(why.remedy == .retryParent(parent))
        #expect(why.waitsFor == parent)
        #expect(why.description.contains(parent.description))
        #expect(try await store.explain(parent, at: Self.now).remedy == .retryOrDiscard)
        try await subject.close()
    }

    @Test("behind the head of its scope: the store names the head (the stores that keep scope order)", arguments: [StoreKind.memory, .log])
    func behindInScope(_ kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind) { $0.unscopedDelivery = .inOrder }
        let head = try await subject.store.add(request(scope: "chat-1"))
        let second = try await subject.store.add(request(scope: "chat-1"))
        let unscopedFirst = try await subject.store.add(request())
        let unscopedSecond = try await subject.store.add(request())
        #expect(try await subject.store.explain(head, at: Self.now).reason == .due)
        let why = try await subject.store.explain(second, at: Self.now)
        #expect(why.reason == .behindInScope(scope: "chat-1", head: head))
        #expect(why.remedy == .waitFor(head))
        // Unscoped writes go in order (the default): the same rule, no scope name.
        #expect(try await subject.store.explain(unscopedSecond, at: Self.now).reason == .behindInScope(scope: nil, head: unscopedFirst))
        try await subject.close()
    }
}

/// The stores `explain` is checked against: the two this package ships, and
/// one that only forwards the protocol's other calls (so it runs the
/// protocol's default `explain`).
enum ExplainedStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, log, protocolDefault

    var testDescription: String { rawValue }

    func make() async throws -> StoreUnderTest {
        switch self {
        case .memory: try await StoreUnderTest.make(.memory)
        case .log: try await StoreUnderTest.make(.log)
        case .protocolDefault:
            try await StoreUnderTest.make(.memory).wrapped { ExplainForwardingStore(wrapped: $0) }
        }
    }
}

/// Forwards everything but `explain` (so the protocol's default runs).
private final class ExplainForwardingStore: ForwardingOutboxStore {
    let wrapped: any OutboxStore
    init(wrapped: any OutboxStore) { self.wrapped = wrapped }
}
