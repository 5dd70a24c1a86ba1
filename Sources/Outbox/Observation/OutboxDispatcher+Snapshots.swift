import Foundation
import OutboxLocking
import OutboxModel
import OutboxStorage

/// The queue's snapshot (``OutboxDispatcherConfiguration/snapshotInterval``):
/// while the dispatcher runs, one task follows its events into a
/// ``QueueActivity`` and another, every interval, writes an
/// ``/OutboxModel/OutboxQueueSnapshot`` through the store if anything
/// changed — the activity, the counts or the dispatcher's state. ``stop()``
/// writes a last one, saying it stopped.
extension OutboxDispatcher {
    /// The two tasks, and what the last snapshot showed.
    struct SnapshotPublishing {
        var follower: Task<Void, Never>
        var ticker: Task<Void, Never>
        let activity: Locked<QueueActivity>
        var published: Published?

        /// What decides whether a new snapshot differs.
        struct Published: Equatable {
            var activity: UInt64
            var summary: OutboxSummary
            var state: OutboxQueueSnapshot.DispatcherState
        }
    }

    func startSnapshots() {
        guard let interval = configuration.snapshotInterval, snapshots == nil else { return }
        let activity = Locked(QueueActivity())
        let events = eventPublisher.stream()
        let clock = clock
        let follower = Task {
            for await event in events { activity.withLock { $0.note(event, at: clock.now()) } }
        }
        let ticker = Task { [weak self] in
            var next = clock.now()
            while !Task.isCancelled {
                next = next.adding(interval)
                do { try await clock.sleep(until: next) } catch { return }
                await self?.publishSnapshotIfChanged()
            }
        }
        snapshots = SnapshotPublishing(follower: follower, ticker: ticker, activity: activity)
    }

    /// At ``stop()``: the tasks end and one last snapshot says the dispatcher stopped.
    func stopSnapshots() async {
        guard let publishing = snapshots else { return }
        publishing.ticker.cancel()
        publishing.follower.cancel()
        await publishSnapshotIfChanged()
        snapshots = nil
    }

    func publishSnapshotIfChanged() async {
        guard let publishing = snapshots else { return }
        do {
            let activity = publishing.activity.withLock { $0 }
            let summary = try await store.summary()
            let published = SnapshotPublishing.Published(
                activity: activity.version, summary: summary, state: snapshotState)
            guard published != snapshots?.published else { return }
            let snapshot = try await snapshot(activity: activity, summary: summary, state: published.state)
            try await store.publishSnapshot(snapshot)
            snapshots?.published = published
        } catch {
            logger.debug("the queue's snapshot was not written", metadata: ["error": "\(error)"])
        }
    }

    private var snapshotState: OutboxQueueSnapshot.DispatcherState {
        let switches = switches.current
        if switches.lifecycle == .stopped { return .stopped }
        if switches.paused { return .paused }
        return switches.online ? .running : .offline
    }

    private func snapshot(
        activity: QueueActivity, summary: OutboxSummary, state: OutboxQueueSnapshot.DispatcherState
    ) async throws(OutboxError) -> OutboxQueueSnapshot {
        let now = clock.now()
        let waiting = try await store.oldestWaiting { [self] (id) throws(OutboxError) in try await self.explain(id) }
        let latency = activity.latency(now: now)
        return OutboxQueueSnapshot(
            takenAt: now, processID: ProcessInfo.processInfo.processIdentifier, dispatcher: state, summary: summary,
            stalledSince: stallWatch.reported ? stallWatch.since : nil, seconds: activity.seconds(now: now),
            latencyP50: latency.p50, latencyP95: latency.p95, waiting: waiting, failures: activity.failures(now: now),
            attempts: activity.attempts())
    }
}
