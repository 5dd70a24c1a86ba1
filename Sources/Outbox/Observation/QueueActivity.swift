import Foundation
import DequeModule
import OutboxStorage

/// What the dispatcher's attempts did, second by second, for the queue's
/// snapshot (``OutboxQueueSnapshot``): deliveries, failures by cause and
/// how long each attempt took, from its `sending` event to its outcome.
/// Fed the dispatcher's own events; keeps ``OutboxQueueSnapshot/secondsKept``
/// seconds.
///
/// - Complexity: ``note(_:at:)`` O(1) amortized; ``seconds(now:)`` O(*s* · *a* log *a*)
///   for *s* kept seconds of *a* attempts each (at most
///   ``latenciesPerSecond`` latencies are kept per second).
struct QueueActivity {
    /// Latencies kept per second for its percentiles: the first ones of
    /// that second (a fair sample when attempts are alike, and bounded).
    static let latenciesPerSecond = 512
    /// Attempts whose start is remembered, waiting for their outcome:
    /// beyond this, the oldest starts are forgotten (their latency is not counted).
    static let startsKept = 4096

    private struct Second {
        var delivered = 0
        var failed = 0
        var latencies: [Double] = []
        var causes: [String: Int] = [:]
    }

    private var secondsByStart: [Int64: Second] = [:]
    private var starts: [OutboxEntry.ID: (at: Date, attempt: Int)] = [:]
    /// The attempts that ended, oldest first, at most ``OutboxQueueSnapshot/attemptsKept``.
    private var ended: Deque<OutboxQueueSnapshot.Attempt> = []
    private var lastFailureAt: [String: Date] = [:]
    /// Bumped by every event: a snapshot is written only when it moved.
    private(set) var version: UInt64 = 0

    mutating func note(_ event: OutboxEvent, at now: Date) {
        version &+= 1
        switch event {
        case .sending(let id, let attempt):
            if starts.count >= Self.startsKept, let oldest = starts.min(by: { $0.value.at < $1.value.at }) {
                starts[oldest.key] = nil
            }
            starts[id] = (now, attempt)
        case .delivered(let id, _), .replayed(let id, _):
            update(now) { $0.delivered += 1 }
            ended(id, at: now, .delivered, failure: nil)
        case .waitingToRetry(let id, _, let failure), .interrupted(let id, _, let failure),
            .quarantined(let id, let failure), .conflict(let id, let failure):
            // A dependent quarantined with its parent had no attempt: no start, no failure of its own.
            guard starts[id] != nil || !isDependency(failure) else { return }
            let cause = Self.cause(failure)
            update(now) {
                $0.failed += 1
                $0.causes[cause, default: 0] += 1
            }
            lastFailureAt[cause] = now
            ended(id, at: now, Self.outcome(event), failure: failure)
        case .discarded(let id, _):
            starts[id] = nil
        default:
            break
        }
        forget(before: now)
    }

    /// The kept seconds with any activity, oldest first.
    func seconds(now: Date) -> [OutboxQueueSnapshot.Second] {
        let first = Self.second(of: now) - Int64(OutboxQueueSnapshot.secondsKept) + 1
        return secondsByStart.filter { $0.key >= first }.sorted { $0.key < $1.key }.map { start, second in
            let sorted = second.latencies.sorted()
            return OutboxQueueSnapshot.Second(
                at: Date(timeIntervalSince1970: Double(start)), delivered: second.delivered, failed: second.failed,
                latencyP50: Self.percentile(sorted, 0.5), latencyP95: Self.percentile(sorted, 0.95))
        }
    }

    /// The median and 95th percentile latency of the attempts that ended in
    /// the last `window` seconds, in milliseconds.
    func latency(now: Date, window: Int = 60) -> (p50: Double?, p95: Double?) {
        let first = Self.second(of: now) - Int64(window) + 1
        let sorted = secondsByStart.filter { $0.key >= first }.values.flatMap(\.latencies).sorted()
        return (Self.percentile(sorted, 0.5), Self.percentile(sorted, 0.95))
    }

    /// Failed attempts of the kept seconds by cause, most frequent first.
    func failures(now: Date) -> [OutboxQueueSnapshot.FailureCount] {
        let first = Self.second(of: now) - Int64(OutboxQueueSnapshot.secondsKept) + 1
        var counts: [String: Int] = [:]
        for (start, second) in secondsByStart where start >= first {
            for (cause, count) in second.causes { counts[cause, default: 0] += count }
        }
        return counts.map { cause, count in
            OutboxQueueSnapshot.FailureCount(cause: cause, count: count, lastAt: lastFailureAt[cause] ?? now)
        }
        .sorted { ($0.count, $0.lastAt) > ($1.count, $1.lastAt) }
        .prefix(OutboxQueueSnapshot.causesKept).map { $0 }
    }

    /// The attempts that ended, newest first.
    func attempts() -> [OutboxQueueSnapshot.Attempt] { ended.reversed() }

    private mutating func ended(
        _ id: OutboxEntry.ID, at now: Date, _ outcome: OutboxQueueSnapshot.Attempt.Outcome, failure: OutboxFailure?
    ) {
        guard let start = starts.removeValue(forKey: id) else { return }
        update(now) {
            if $0.latencies.count < Self.latenciesPerSecond {
                $0.latencies.append(max(0, now.timeIntervalSince(start.at) * 1000))
            }
        }
        if ended.count >= OutboxQueueSnapshot.attemptsKept { ended.removeFirst() }
        ended.append(
            OutboxQueueSnapshot.Attempt(
                id: id, attempt: max(1, start.attempt), startedAt: start.at, endedAt: max(now, start.at), outcome: outcome,
                cause: failure.map(Self.cause), detail: failure?.description))
    }

    private static func outcome(_ event: OutboxEvent) -> OutboxQueueSnapshot.Attempt.Outcome {
        switch event {
        case .interrupted: .interrupted
        case .quarantined: .quarantined
        case .conflict: .conflict
        default: .waitingToRetry
        }
    }

    private mutating func update(_ now: Date, _ change: (inout Second) -> Void) {
        change(&secondsByStart[Self.second(of: now), default: Second()])
    }

    private mutating func forget(before now: Date) {
        let first = Self.second(of: now) - Int64(OutboxQueueSnapshot.secondsKept) + 1
        guard secondsByStart.count > OutboxQueueSnapshot.secondsKept else { return }
        secondsByStart = secondsByStart.filter { $0.key >= first }
        let kept = Set(secondsByStart.values.flatMap(\.causes.keys))
        lastFailureAt = lastFailureAt.filter { kept.contains($0.key) }
    }

    private func isDependency(_ failure: OutboxFailure) -> Bool {
        if case .dependency = failure.cause { return true }
        return false
    }

    static func cause(_ failure: OutboxFailure) -> String {
        failure.httpStatus.map { "\(failure.cause.name), HTTP \($0)" } ?? failure.cause.name
    }

    private static func second(of date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    private static func percentile(_ sorted: [Double], _ fraction: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let index = min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)
        return sorted[max(0, index)]
    }
}
