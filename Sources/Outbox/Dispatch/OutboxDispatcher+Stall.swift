import Foundation
import Logging
import OutboxModel
import OutboxStorage

/// When the queue last moved, and whether its stall was reported: the
/// dispatcher's stall watch (``OutboxDispatcherConfiguration/stallThreshold``).
struct StallWatch {
    /// The last time the queue moved, or the time its unsent writes were
    /// first seen waiting; `nil` until then, and again once a check finds
    /// nothing unsent.
    var since: Date?
    /// The stall since `since` has been reported.
    var reported = false
}

/// The stall watch: a queue that holds unsent writes and has moved none of
/// them for longer than the threshold is reported once — an event, a log
/// line, a gauge — with why its oldest write waits. It is checked when a
/// drain ends and when the dispatcher's one timer fires, which sleeps until
/// the next retry or the stall deadline, whichever comes first.
extension OutboxDispatcher {
    /// The queue moved: a drain delivered or set aside something, or the app
    /// decided about a write.
    func noteProgress(_ report: OutboxFlushReport? = nil) {
        if let report, report.delivered + report.quarantined + report.conflicts + report.discarded == 0 { return }
        if stallWatch.reported {
            metrics.stalled.record(0)
            logger.notice("the outbox moves again")
        }
        stallWatch = StallWatch(since: clock.now())
    }

    /// When the queue counts as stalled if nothing moves before, if the
    /// watch is on and has something to wait for.
    var stallDeadline: Date? {
        guard let threshold = configuration.stallThreshold, let since = stallWatch.since, !stallWatch.reported,
            lifecycle != .stopped
        else { return nil }
        return since.adding(threshold)
    }

    /// Reports the stall if the queue holds unsent writes and has not moved
    /// for the threshold; forgets the watch when nothing is unsent.
    ///
    /// Called at the end of every drain: before its deadline a watch that
    /// is running costs no call to the store.
    func checkStall() async {
        guard let threshold = configuration.stallThreshold, lifecycle != .stopped else { return }
        let now = clock.now()
        if let since = stallWatch.since, !stallWatch.reported, now < since.adding(threshold) { return }
        guard let unsent = try? await store.summary().unsent, unsent > 0 else {
            if stallWatch.reported { noteProgress() }
            stallWatch = StallWatch()
            return
        }
        guard let since = stallWatch.since else {
            stallWatch.since = now
            return
        }
        guard !stallWatch.reported, now >= since.adding(threshold),
            let oldest = try? await store.ids(matching: OutboxFilter(statuses: [.pending, .waitingToRetry, .inFlight])).first,
            let why = try? await explain(oldest)
        else { return }
        guard !stallWatch.reported, stallWatch.since == since else { return }  // the queue moved meanwhile
        stallWatch.reported = true
        let stall = OutboxStall(since: since, unsent: unsent, oldest: why)
        metrics.stalled.record(1)
        logger.warning(
            "the outbox is stalled: \(stall)",
            metadata: ["unsent": "\(unsent)", "oldest": "\(oldest)", "reason": "\(why.reason.name)"])
        publish(.stalled(stall))
    }
}
