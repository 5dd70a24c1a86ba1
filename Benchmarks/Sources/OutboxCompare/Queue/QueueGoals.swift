import Foundation

// The queue rows' goals: rates of our own, and every row against SQLite
// (≥ 10×) and RocksDB (≥ 2×) used as queues. A throughput row compares
// elements per second (the median of the per-round ratios); a latency row,
// where every contender runs at the same pace, compares p99 latencies.

/// Tape-style and the other peers are reported, not judged.
private let judgedPeers: [(prefix: String, atLeast: Double)] = [("SQLite", 10), ("RocksDB", 2)]

func queueGoals(_ comparison: (String) -> Comparison?) -> [Goal] {
    var goals: [Goal] = []
    goals.append(
        rateGoal(
            "queue written produce, 1 producer ≥ 300k/s (1M/s on the mapped path)", comparison("queue.written.produce"),
            unit: "elements/s", atLeast: 300_000))
    goals.append(
        rateGoal(
            "queue consume from the page cache ≥ 2M/s", comparison("queue.written.consume"), unit: "elements/s",
            atLeast: 2_000_000))
    goals.append(latencyGoal(comparison("queue.written.latency"), atMostMicros: 20))
    for id in ["queue.written.produce", "queue.written.consume", "queue.written.1p1c", "queue.durable.1p1c", "queue.written.8p4c", "queue.durable.8p4c"] {
        for (peer, target) in judgedPeers {
            goals.append(ratioGoal("\(id) ≥ \(Int(target))× \(peer) as a queue", comparison(id), against: peer, atLeast: target))
        }
    }
    for id in ["queue.written.latency", "queue.durable.latency"] {
        for (peer, target) in judgedPeers {
            goals.append(latencyRatioGoal(id, comparison(id), against: peer, atLeast: target))
        }
    }
    return goals
}

/// Append-to-consume p99 at the row's pace, at most `atMostMicros`.
private func latencyGoal(_ comparison: Comparison?, atMostMicros bound: Double) -> Goal {
    let goal = "queue append-to-consume p99 ≤ \(Int(bound)) µs at 1k elements/s (written)"
    guard let p99 = comparison?.ours?.p99Micros else { return Goal(goal: goal, measured: "not measured", met: nil, margin: "") }
    return Goal(
        goal: goal, measured: "p99 \(format(p99)) µs", met: p99 <= bound,
        margin: p99 <= bound ? String(format: "%.2f× under the bound", bound / max(p99, 1e-9)) : String(format: "%.1f× the bound", p99 / bound))
}

/// The peer's p99 over ours, at least `target`.
private func latencyRatioGoal(_ id: String, _ comparison: Comparison?, against prefix: String, atLeast target: Double) -> Goal {
    let goal = "\(id): p99 ≥ \(Int(target))× lower than \(prefix) as a queue"
    guard let ours = comparison?.ours?.p99Micros,
        let peer = comparison?.results.first(where: { !$0.isOurs && $0.name.hasPrefix(prefix) }), let theirs = peer.p99Micros
    else { return Goal(goal: goal, measured: "not measured", met: nil, margin: "") }
    let ratio = theirs / max(ours, 1e-9)
    return Goal(
        goal: goal, measured: String(format: "%.2f× (p99 %@ µs vs %@ µs, \(peer.name))", ratio, format(ours), format(theirs)),
        met: ratio >= target, margin: margin(ratio, target))
}
