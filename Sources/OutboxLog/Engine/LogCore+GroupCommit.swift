import Dispatch
import Foundation

/// Group commit's pacing: how the writer thread (LogCore+Writer) decides
/// whether a sync waits a moment for more durable appends to join it, and
/// how a group's waiters are resumed.
extension LogCore {
    /// Resumes a group's waiters. A large group is handed to one job on
    /// the global pool, which resumes them all: the writer thread goes
    /// back to the next group after one enqueue instead of one per waiter
    /// (each may wake a pool thread), so the next sync starts sooner.
    static func resume(
        _ finished: [(UnsafeContinuation<Result<Void, OutboxLogError>, Never>, Result<Void, OutboxLogError>)], inOneJob: Bool
    ) {
        guard inOneJob, finished.count >= resumeInOneJobFrom else {
            for (continuation, result) in finished { continuation.resume(returning: result) }
            return
        }
        DispatchQueue.global().async {
            for (continuation, result) in finished { continuation.resume(returning: result) }
        }
    }

    /// Groups at least this large are resumed in one job.
    static let resumeInOneJobFrom = 8

    /// What the last group commit looked like, to decide whether the next
    /// one should wait a moment for more durable appends to join it.
    struct GroupPacing {
        /// A slowly decaying maximum of recent group sizes (durable waiters
        /// per sync): how many producers seem to be taking part.
        var recentPeak = 0.0
        /// How long the last write + sync took.
        var lastSync = Duration.zero
        /// Whether the next sync may wait for company (once per sync).
        var mayGather = false

        /// How long to look for the next append before sleeping, after a
        /// sync that served one or two producers; `nil`: sleep at once.
        var linger: Duration?
        /// How often a look lately found the next append: a decaying
        /// average, 1 when every look did.
        var lingerHitRate = 1.0
        /// Syncs since the last look, while looks mostly find nothing.
        var syncsWithoutLinger = 0

        mutating func record(group: Int, took duration: Duration) {
            recentPeak = max(Double(group), recentPeak * 0.9)
            lastSync = duration
            mayGather = group >= Self.minimumGroup
            linger = nil
            guard (1...2).contains(group) else { return }
            if lingerHitRate < Self.lingerWhileHitRate {
                // Looks mostly miss: sleep at once, but look now and then
                // in case the producers changed pace.
                syncsWithoutLinger += 1
                guard syncsWithoutLinger >= Self.syncsBetweenProbes else { return }
            }
            syncsWithoutLinger = 0
            linger = min(duration / 4, Self.maximumLinger)
        }

        /// The writer looked for the next append (once per sync). Looks
        /// that mostly find none mean the producers do not come straight
        /// back — a server between a key's claim and its response, a
        /// producer that works between appends — and every spin would take
        /// a core from them.
        mutating func lingerEnded(foundWork: Bool) {
            linger = nil
            lingerHitRate = lingerHitRate * 0.875 + (foundWork ? 0.125 : 0)
        }

        /// Looks go on while at least this share of them finds the next append.
        static let lingerWhileHitRate = 0.5
        /// While looks mostly miss, one sync in this many looks anyway.
        static let syncsBetweenProbes = 16

        /// The longest the writer looks for the next durable append before sleeping.
        static let maximumLinger = Duration.microseconds(100)

        /// How many durable waiters are worth waiting for: half the recent
        /// peak (measured best of 0.5, 0.75 and 0.9 with 64 producers).
        var wanted: Int { Int(recentPeak * 0.5) }

        /// Only after a sync that served several producers: one producer
        /// at a time must never wait for company that is not coming.
        static let minimumGroup = 4
        /// Never hold a group longer than this, however slow the disk.
        static let maximumDelay = Duration.milliseconds(2)
    }

    /// Commit delay (PostgreSQL's `commit_delay`, made adaptive). When the
    /// last sync served many producers, each of them appends again as soon
    /// as it is resumed — but they are resumed one by one on two threads,
    /// so a sync started at once would carry only the first few and the
    /// group would shrink. Waiting up to half the last sync's duration for
    /// half of the recent group size to be back keeps groups
    /// large: one sync per many appends. After a sync that served fewer
    /// than four producers it never waits, so one producer at a time never
    /// pays for this.
    func gatherDurableWaiters(_ pacing: inout GroupPacing) {
        guard pacing.mayGather else { return }
        pacing.mayGather = false
        let wanted = pacing.wanted
        let deadline = ContinuousClock.now.advanced(by: min(pacing.lastSync / 2, GroupPacing.maximumDelay))
        while true {
            let (waiting, stop) = state.withLock { state -> (Int, Bool) in
                let count = Self.durableWaiters(in: state)
                // Someone is waiting to be durable, but too few: sleep until
                // the next append wakes the writer (or the deadline).
                if count > 0 && count < wanted && !state.stopRequested { state.writerSleeping = true }
                return (count, state.stopRequested)
            }
            if waiting == 0 || waiting >= wanted || stop { break }
            let now = ContinuousClock.now
            guard now < deadline else { break }
            let left = now.duration(to: deadline)
            let nanoseconds = Int(left.components.seconds) * 1_000_000_000 + Int(left.components.attoseconds / 1_000_000_000)
            _ = writerWakeup.wait(timeout: .now() + .nanoseconds(nanoseconds))
        }
        state.withLock { $0.writerSleeping = false }
    }
}
