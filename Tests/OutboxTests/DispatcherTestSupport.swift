import CLITestSupport
import Foundation
import Outbox
import OutboxLocking
import Testing

/// A handler scripted per entry: records every delivery it sees and answers
/// from a script (by payload text), default `.delivered(nil)`.
final class ScriptedHandler: OutboxHandler {
    let conflictPolicy: OutboxConflictPolicy
    private let state = Locked<(deliveries: [OutboxDelivery], script: [String: [OutboxOutcome]], resends: Int)>(([], [:], 0))
    private let onDeliver: (@Sendable (OutboxDelivery) async throws -> Void)?

    init(conflictPolicy: OutboxConflictPolicy = .manual, onDeliver: (@Sendable (OutboxDelivery) async throws -> Void)? = nil) {
        self.conflictPolicy = conflictPolicy
        self.onDeliver = onDeliver
    }

    /// Answers for the entry whose payload is `payload`, in order; the last repeats.
    func script(_ payload: String, _ outcomes: OutboxOutcome...) {
        state.withLock { $0.script[payload] = outcomes }
    }

    var deliveries: [OutboxDelivery] { state.withLock { $0.deliveries } }
    var resends: Int { state.withLock { $0.resends } }

    func deliveries(of id: OutboxEntry.ID) -> [OutboxDelivery] { deliveries.filter { $0.id == id } }

    func deliver(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        let outcome = state.withLock { state -> OutboxOutcome in
            state.deliveries.append(delivery)
            let key = String(decoding: delivery.entry.payload, as: UTF8.self)
            guard var outcomes = state.script[key], let first = outcomes.first else { return .delivered(serverID: nil) }
            if outcomes.count > 1 {
                outcomes.removeFirst()
                state.script[key] = outcomes
            }
            return first
        }
        try await onDeliver?(delivery)
        return outcome
    }

    func resendAfterConflict(_ delivery: OutboxDelivery) async throws -> OutboxOutcome {
        state.withLock { $0.resends += 1 }
        return .delivered(serverID: "forced")
    }
}

/// Collects a dispatcher's events and lets a test wait for one to happen —
/// by awaiting the event stream, never by sleeping.
final class EventLog: Sendable {
    private let events = Locked<[OutboxEvent]>([])
    private let waiters = Locked<[(token: UUID, predicate: @Sendable ([OutboxEvent]) -> Bool, continuation: CheckedContinuation<Void, Never>)]>([])
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    init(_ stream: AsyncStream<OutboxEvent>) {
        let task = Task { [weak self] in
            for await event in stream { self?.record(event) }
        }
        self.task.withLock { $0 = task }
    }

    deinit { task.withLock { $0?.cancel() } }

    var all: [OutboxEvent] { events.withLock { $0 } }

    private func record(_ event: OutboxEvent) {
        let snapshot = events.withLock { events -> [OutboxEvent] in
            events.append(event)
            return events
        }
        let ready = waiters.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            let (met, unmet) = (waiters.filter { $0.predicate(snapshot) }, waiters.filter { !$0.predicate(snapshot) })
            waiters = unmet
            return met.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once the events seen so far satisfy `predicate`. If the test
    /// is cancelled first (its time limit), records an issue and returns.
    func wait(
        until predicate: @escaping @Sendable ([OutboxEvent]) -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let token = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let satisfied = waiters.withLock { waiters -> Bool in
                    if predicate(events.withLock { $0 }) || Task.isCancelled { return true }
                    waiters.append((token, predicate, continuation))
                    return false
                }
                if satisfied { continuation.resume() }
            }
        } onCancel: {
            let cancelled = waiters.withLock { waiters -> CheckedContinuation<Void, Never>? in
                guard let index = waiters.firstIndex(where: { $0.token == token }) else { return nil }
                return waiters.remove(at: index).continuation
            }
            cancelled?.resume()
        }
        if Task.isCancelled && !predicate(all) {
            Issue.record("the awaited event never came; events: \(all)", sourceLocation: sourceLocation)
        }
    }

    func count(where match: (OutboxEvent) -> Bool) -> Int { all.filter(match).count }
}

extension OutboxEvent {
    var deliveredID: OutboxEntry.ID? {
        if case .delivered(let id, _) = self { return id }
        return nil
    }

    var isWaitingToRetry: Bool {
        if case .waitingToRetry = self { return true }
        return false
    }
}

/// A simple action for dispatcher tests.
struct Note: OutboxAction, Encodable {
    static let type = "note"
    var text: String
    var conversation: String?
    var method: String { "POST" }
    var endpoint: String { "/notes" }
    var scope: String? { conversation }
    func payload() throws -> [UInt8] { Array(text.utf8) }
}

/// A dispatcher over an in-memory store with a manual clock.
struct DispatcherFixture {
    let store: InMemoryOutboxStore
    let clock = ManualOutboxClock()
    let handler: ScriptedHandler
    let dispatcher: OutboxDispatcher
    let events: EventLog

    init(
        handler: ScriptedHandler = ScriptedHandler(), store: InMemoryOutboxStore? = nil,
        configure: (inout OutboxDispatcherConfiguration) -> Void = { _ in }
    ) {
        self.store = store ?? InMemoryOutboxStore(partition: "u", configuration: quietConfiguration())
        self.handler = handler
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 42
        configuration.maximumAge = nil
        configure(&configuration)
        dispatcher = OutboxDispatcher(
            store: self.store, handlers: [Note.type: handler, "post": handler], configuration: configuration, clock: clock)
        events = EventLog(dispatcher.events())
    }

    /// Enqueues a note without triggering the background flush race: the
    /// store directly.
    @discardableResult
    func add(_ text: String, scope: String? = nil, dependencies: [OutboxEntry.ID] = [], type: String = Note.type,
             endpoint: String = "/notes", maxAttempts: Int? = nil) async throws -> OutboxEntry.ID {
        try await store.enqueue(
            OutboxEnqueueRequest(
                type: type, method: "POST", endpoint: endpoint, payload: Array(text.utf8), scope: scope,
                dependencies: dependencies, maxAttempts: maxAttempts, createdAt: clock.now())
        ).id
    }
}
