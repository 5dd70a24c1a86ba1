import Foundation
import Outbox
import OutboxLocking

/// Counts the dispatchers' events across both lives of the app.
final class Tally: Sendable {
    struct Counts: Sendable {
        var delivered = 0
        var waitingToRetry = 0
        /// Attempts whose answer was lost after the request was sent (resent promptly).
        var interrupted = 0
        var quarantined = 0
        /// Distinct entries sent with `local:` ids replaced.
        var remapped = 0
        var deliveredIDs: Set<OutboxEntry.ID> = []
        var remappedIDs: Set<OutboxEntry.ID> = []
    }

    private let counts = Locked(Counts())

    /// What to do once `delivered` reaches a count, run once on the event
    /// stream's task: the demo's app kill happens at that delivery, not up
    /// to a polling interval later (a fast drain would be over by then).
    private let trigger = Locked<(count: Int, action: @Sendable () -> Void)?>(nil)

    /// Runs `action` as soon as `count` deliveries have been seen.
    func onDelivered(_ count: Int, _ action: @escaping @Sendable () -> Void) {
        trigger.withLock { $0 = (count, action) }
    }

    private func fireTriggerIfDue(delivered: Int) {
        let action: (@Sendable () -> Void)? = trigger.withLock { pending in
            guard let armed = pending, delivered >= armed.count else { return nil }
            pending = nil
            return armed.action
        }
        action?()
    }

    var snapshot: Counts { counts.withLock { $0 } }

    func follow(_ events: AsyncStream<OutboxEvent>) -> Task<Void, Never> {
        Task {
            for await event in events {
                let delivered = counts.withLock { counts in
                    switch event {
                    case .delivered(let id, _):
                        if counts.deliveredIDs.insert(id).inserted { counts.delivered += 1 }
                    case .waitingToRetry: counts.waitingToRetry += 1
                    case .interrupted: counts.interrupted += 1
                    case .quarantined: counts.quarantined += 1
                    case .remapped(let id, _, _):
                        if counts.remappedIDs.insert(id).inserted { counts.remapped += 1 }
                    default: break
                    }
                    return counts.delivered
                }
                fireTriggerIfDue(delivered: delivered)
            }
        }
    }

    /// Polls (on the real clock: this is the demo, not a test) until
    /// `condition` or `done` holds, printing progress twice a second.
    ///
    /// - Throws: ``DemoFailure`` once `deadline` has passed or `failures`
    ///   holds an error; whatever `done` throws.
    func wait(
        until condition: (Counts) -> Bool, progress: (String) -> Void, total: Int,
        deadline: ContinuousClock.Instant, failures: DemoFailures,
        done: () async throws -> Bool = { false }
    ) async throws {
        var ticks = 0
        while true {
            let now = snapshot
            if condition(now) { return }
            if try await done() { return }
            if let failure = failures.first { throw DemoFailure(failure) }
            if ContinuousClock.now >= deadline { throw DemoFailure.deadlinePassed }
            ticks += 1
            if ticks % 10 == 0 {
                progress(
                    "  delivered \(now.delivered)/\(total), retries \(now.waitingToRetry), interrupted \(now.interrupted), "
                        + "quarantined \(now.quarantined)")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
