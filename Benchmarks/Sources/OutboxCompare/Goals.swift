import Foundation

// The goals an outbox-compare run is judged against, from its report.

/// "1.31× the target" or "missed by 35% (0.65× the target)".
func margin(_ measured: Double, _ target: Double) -> String {
    let share = measured / target
    if share >= 1 { return String(format: "%.2f× the target", share) }
    let digits = share >= 0.1 ? "%.2f" : (share >= 0.01 ? "%.3f" : "%.4f")
    return String(format: "missed by %.1f%% (" + digits + "× the target)", (1 - share) * 100, share)
}

/// The goal against the *fastest* contender whose name starts with `prefix`
/// (for SQLite: the better of GRDB's async and blocking APIs).
func ratioGoal(_ goal: String, _ comparison: Comparison?, against prefix: String, atLeast target: Double) -> Goal {
    let candidates = comparison?.results.filter { !$0.isOurs && $0.name.hasPrefix(prefix) && $0.oursOverThis != nil } ?? []
    guard let best = candidates.min(by: { $0.oursOverThis! < $1.oursOverThis! }), let ratio = best.oursOverThis else {
        return Goal(goal: goal, measured: "not measured", met: nil, margin: "")
    }
    return Goal(
        goal: goal,
        measured: String(format: "%.2f×", ratio) + " vs \(best.name) (median of per-round ratios, `\(comparison!.id)`)",
        met: ratio >= target, margin: margin(ratio, target))
}

/// The goal that our median throughput in `comparison` reaches `target`.
func rateGoal(_ goal: String, _ comparison: Comparison?, unit: String, atLeast target: Double) -> Goal {
    guard let ours = comparison?.ours else { return Goal(goal: goal, measured: "not measured", met: nil, margin: "") }
    return Goal(
        goal: goal, measured: "\(short(ours.throughput)) \(unit) (median)", met: ours.throughput >= target,
        margin: margin(ours.throughput, target))
}

/// The goal that a per-enqueue cost (µs) stays within 1.2× from the
/// shallowest queue to the deepest, `label` naming the two depths.
private func flatCostGoal(_ what: String, at label: String, from shallow: Double, to deep: Double) -> Goal {
    let ratio = deep / shallow
    return Goal(
        goal: "per-enqueue cost at \(label) within 1.2× (\(what))",
        measured: String(format: "%.2f× (%@ → %@ µs)", ratio, format(shallow), format(deep)),
        met: ratio <= 1.2, margin: ratio <= 1.2 ? "within" : String(format: "%.0f%% over the bound", (ratio / 1.2 - 1) * 100))
}

func evaluateGoals(_ report: Report) -> [Goal] {
    func comparison(_ id: String) -> Comparison? { report.comparisons.first { $0.id == id } }
    let raw = "raw write+fdatasync loop"
    let full = "SQLite FULL"
    let normal = "SQLite NORMAL"
    var goals: [Goal] = []
    goals.append(ratioGoal("durable, 1 producer ≥ 0.9× the raw write+fdatasync loop (enqueue)", comparison("durable.1p.enqueue"), against: raw, atLeast: 0.9))
    goals.append(ratioGoal("durable, 1 producer ≥ 0.9× the preallocated overwrite loop (enqueue)", comparison("durable.1p.enqueue"), against: "raw overwrite+fdatasync", atLeast: 0.9))
    goals.append(ratioGoal("durable, 1 producer ≥ 0.9× the raw loop (enqueue + acknowledge)", comparison("durable.1p.enqueue+ack"), against: raw, atLeast: 0.9))
    goals.append(ratioGoal("durable, 1 producer ≥ 2× SQLite FULL (enqueue)", comparison("durable.1p.enqueue"), against: full, atLeast: 2))
    goals.append(ratioGoal("durable, 1 producer ≥ 2× SQLite FULL (enqueue + acknowledge)", comparison("durable.1p.enqueue+ack"), against: full, atLeast: 2))
    goals.append(rateGoal("durable, 64 producers ≥ 150k enqueues/s", comparison("durable.64p.enqueue"), unit: "enqueues/s", atLeast: 150_000))
    goals.append(ratioGoal("durable, 64 producers ≥ 20× SQLite FULL at 64", comparison("durable.64p.enqueue"), against: full, atLeast: 20))
    goals.append(ratioGoal("written ≥ 30× SQLite NORMAL (1 producer, enqueue)", comparison("written.1p.enqueue"), against: normal, atLeast: 30))
    goals.append(ratioGoal("written ≥ 10× SQLite NORMAL (1 producer, enqueue + acknowledge)", comparison("written.1p.enqueue+ack"), against: normal, atLeast: 10))
    goals.append(ratioGoal("written ≥ 30× SQLite NORMAL (64 producers, enqueue)", comparison("written.64p.enqueue"), against: normal, atLeast: 30))
    goals += engineGoals(comparison)
    goals += queueGoals(comparison)
    if let drain = report.drain {
        for result in drain.results where result.name.hasPrefix("ours") {
            goals.append(
                Goal(
                    goal: "drain ≥ 100k entries/s — \(result.name)", measured: "\(short(result.throughput)) entries/s",
                    met: result.throughput >= 100_000, margin: margin(result.throughput, 100_000)))
        }
    }
    if let largest = report.recovery.last {
        goals.append(
            Goal(
                goal: "recovery ≥ 500 MB/s (\(short(Double(largest.records))) records, page cache warm)",
                measured: "\(format(largest.warmMBps)) MB/s", met: largest.warmMBps >= 500, margin: margin(largest.warmMBps, 500)))
        if let cold = largest.coldMBps {
            goals.append(
                Goal(
                    goal: "recovery ≥ 500 MB/s (\(short(Double(largest.records))) records, cold: pages dropped)",
                    measured: "\(format(cold)) MB/s", met: cold >= 500, margin: margin(cold, 500)))
        }
    }
    if let first = report.depth.first, let last = report.depth.last, last.depth > first.depth {
        let label = "\(short(Double(last.depth))) vs \(short(Double(first.depth))) pending"
        goals.append(flatCostGoal("durable, p50", at: label, from: first.oursDurableP50Micros, to: last.oursDurableP50Micros))
        goals.append(
            flatCostGoal(
                "buffered enqueue: no sync, mean", at: label, from: first.oursBufferedMeanMicros, to: last.oursBufferedMeanMicros))
        let json = report.depth.filter { $0.jsonMeanMicros != nil }
        if let low = json.first, let high = json.last, high.depth > low.depth {
            let costRatio = high.jsonMeanMicros! / low.jsonMeanMicros!
            let depthRatio = Double(high.depth) / Double(low.depth)
            let exponent = log(costRatio) / log(depthRatio)
            goals.append(
                Goal(
                    goal: "the JSON file degrades linearly (for contrast)",
                    measured: String(
                        format: "%.0f× the cost for %.0f× the depth (%@ → %@ µs; cost ∝ depth^%.2f)", costRatio, depthRatio,
                        format(low.jsonMeanMicros!), format(high.jsonMeanMicros!), exponent),
                    met: nil, margin: ""))
        }
    }
    // A run of some sections only judges what it measured.
    return goals.filter { $0.measured != "not measured" }
}

/// The engine rows' goals: `OutboxLog` against RocksDB and the raw loops.
private func engineGoals(_ comparison: (String) -> Comparison?) -> [Goal] {
    let rocksDB = "RocksDB"
    var goals: [Goal] = []
    goals.append(rateGoal("engine written append, 1 writer ≥ 1M/s", comparison("engine.written.1w.append"), unit: "appends/s", atLeast: 1_000_000))
    goals.append(ratioGoal("engine written append, 1 writer ≥ 3× RocksDB --sync=0", comparison("engine.written.1w.append"), against: rocksDB, atLeast: 3))
    goals.append(ratioGoal("engine durable append, 1 writer ≥ 0.9× the preallocated overwrite loop", comparison("engine.durable.1w.append"), against: "raw overwrite+fdatasync", atLeast: 0.9))
    goals.append(ratioGoal("engine durable append, 1 writer ≥ 1× RocksDB --sync=1", comparison("engine.durable.1w.append"), against: rocksDB, atLeast: 1))
    goals.append(ratioGoal("engine durable append, 64 writers ≥ 1× RocksDB --sync=1 with 64 threads", comparison("engine.durable.64w.append"), against: rocksDB, atLeast: 1))
    return goals
}
