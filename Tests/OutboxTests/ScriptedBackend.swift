import Foundation
import OutboxLocking

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// A store backend that behaves like a log whose syncs the test controls:
/// every batch is `written` as soon as it is submitted, and `durable` only
/// when the test calls ``syncAll()`` — or never, after ``failSync(_:)``,
/// which fails every waiter and every later call, as a failed `fsync`
/// poisons the real log. Batches become durable in order (a prefix), as in
/// the real log. With it, a test can hold an enqueue between `written` and
/// `durable` for as long as it likes, without timing.
final class ScriptedBackend: StoreBackend {
    private struct Waiter {
        var batch: Int
        var continuation: CheckedContinuation<Result<Void, OutboxError>, Never>
    }

    private struct State {
        var bodies: [OutboxEntryID: EntryBody] = [:]
        var submitted = 0
        var durableThrough = 0
        var failure: OutboxError?
        var waiters: [Waiter] = []
        var waiterArrivals: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Batches submitted so far.
    var submittedBatches: Int { state.withLock { $0.submitted } }

    /// Callers waiting for a batch to become durable.
    var durableWaiters: Int { state.withLock { $0.waiters.count } }

    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody {
        PreparedBody(body: body, encoded: nil, storedBytes: try EntryCodec.encode(body).count)
    }

    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom { .unbounded }

    func submit(
        _ changes: StoreChanges, newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement {
        let batch = try state.withLock { state throws(OutboxError) -> Int in
            if let failure = state.failure { throw failure }
            for change in changes {
                switch change {
                case .newEntry(let id):
                    guard var body = newBodies.first(where: { $0.body.id == id })?.body, let metadata = scheduler.metadata(id) else { continue }
                    body.sequence = metadata.sequence
                    state.bodies[id] = body
                case .remove(let id): state.bodies[id] = nil
                case .state, .completion, .removeCompletion: break
                }
            }
            state.submitted += 1
            return state.submitted
        }
        return StoreAcknowledgement(
            wait: { [self] durability throws(OutboxError) in try await wait(batch: batch, durable: durability == .durable) },
            reached: { [self] durability in
                state.withLock { $0.failure == nil && (durability != .durable || batch <= $0.durableThrough) }
            })
    }

    private func wait(batch: Int, durable: Bool) async throws(OutboxError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, OutboxError>, Never>) in
            let (immediate, arrivals) = state.withLock { state -> (Result<Void, OutboxError>?, [CheckedContinuation<Void, Never>]) in
                if let failure = state.failure { return (.failure(failure), []) }
                if !durable || batch <= state.durableThrough { return (.success(()), []) }
                state.waiters.append(Waiter(batch: batch, continuation: continuation))
                defer { state.waiterArrivals = [] }
                return (nil, state.waiterArrivals)
            }
            for arrival in arrivals { arrival.resume() }
            if let immediate { continuation.resume(returning: immediate) }
        }
        try result.get()
    }

    /// Returns once at least `count` callers wait for durability.
    func waitForDurableWaiters(_ count: Int) async {
        while state.withLock({ $0.waiters.count }) < count {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.waiters.count >= count { return true }
                    state.waiterArrivals.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Every batch submitted so far becomes durable.
    func syncAll() {
        let resumed = state.withLock { state -> [Waiter] in
            state.durableThrough = state.submitted
            let done = state.waiters
            state.waiters = []
            return done
        }
        for waiter in resumed { waiter.continuation.resume(returning: .success(())) }
    }

    /// The next sync fails: every waiter and every later call gets `error`.
    func failSync(_ error: OutboxError) {
        let resumed = state.withLock { state -> [Waiter] in
            state.failure = error
            let done = state.waiters
            state.waiters = []
            return done
        }
        for waiter in resumed { waiter.continuation.resume(returning: .failure(error)) }
    }

    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?] {
        try state.withLock { state throws(OutboxError) -> [EntryBody?] in
            if let failure = state.failure { throw failure }
            return ids.map { state.bodies[$0] }
        }
    }

    func close() async throws(OutboxError) {}
}
