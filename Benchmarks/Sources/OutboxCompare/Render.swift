import Foundation
import OutboxBenchSupport

// MARK: - Goals

/// "1.31× the target" or "missed by 35% (0.65× the target)".
private func margin(_ measured: Double, _ target: Double) -> String {
    let share = measured / target
    if share >= 1 { return String(format: "%.2f× the target", share) }
    let digits = share >= 0.1 ? "%.2f" : (share >= 0.01 ? "%.3f" : "%.4f")
    return String(format: "missed by %.1f%% (" + digits + "× the target)", (1 - share) * 100, share)
}

/// The goal against the *fastest* contender whose name starts with `prefix`
/// (for SQLite: the better of GRDB's async and blocking APIs).
private func ratioGoal(_ goal: String, _ comparison: Comparison?, against prefix: String, atLeast target: Double) -> Goal {
    let candidates = comparison?.results.filter { !$0.isOurs && $0.name.hasPrefix(prefix) && $0.oursOverThis != nil } ?? []
    guard let best = candidates.min(by: { $0.oursOverThis! < $1.oursOverThis! }), let ratio = best.oursOverThis else {
        return Goal(goal: goal, measured: "not measured", met: nil, margin: "")
    }
    return Goal(
        goal: goal,
        measured: String(format: "%.2f×", ratio) + " vs \(best.name) (median of per-round ratios, `\(comparison!.id)`)",
        met: ratio >= target, margin: margin(ratio, target))
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
    if let ours = comparison("durable.64p.enqueue")?.ours {
        goals.append(
            Goal(
                goal: "durable, 64 producers ≥ 150k enqueues/s", measured: "\(short(ours.throughput)) enqueues/s (median)",
                met: ours.throughput >= 150_000, margin: margin(ours.throughput, 150_000)))
    }
    goals.append(ratioGoal("durable, 64 producers ≥ 20× SQLite FULL at 64", comparison("durable.64p.enqueue"), against: full, atLeast: 20))
    goals.append(ratioGoal("written ≥ 30× SQLite NORMAL (1 producer, enqueue)", comparison("written.1p.enqueue"), against: normal, atLeast: 30))
    goals.append(ratioGoal("written ≥ 10× SQLite NORMAL (1 producer, enqueue + acknowledge)", comparison("written.1p.enqueue+ack"), against: normal, atLeast: 10))
    goals.append(ratioGoal("written ≥ 30× SQLite NORMAL (64 producers, enqueue)", comparison("written.64p.enqueue"), against: normal, atLeast: 30))
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
        let durable = last.oursDurableP50Micros / first.oursDurableP50Micros
        goals.append(
            Goal(
                goal: "per-enqueue cost at \(label) within 1.2× (durable, p50)",
                measured: String(format: "%.2f× (%@ → %@ µs)", durable, format(first.oursDurableP50Micros), format(last.oursDurableP50Micros)),
                met: durable <= 1.2, margin: durable <= 1.2 ? "within" : String(format: "%.0f%% over the bound", (durable / 1.2 - 1) * 100)))
        let cpu = last.oursBufferedMeanMicros / first.oursBufferedMeanMicros
        goals.append(
            Goal(
                goal: "per-enqueue cost at \(label) within 1.2× (buffered enqueue: no sync, mean)",
                measured: String(format: "%.2f× (%@ → %@ µs)", cpu, format(first.oursBufferedMeanMicros), format(last.oursBufferedMeanMicros)),
                met: cpu <= 1.2, margin: cpu <= 1.2 ? "within" : String(format: "%.0f%% over the bound", (cpu / 1.2 - 1) * 100)))
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
    return goals
}

// MARK: - Markdown

private func cell(_ value: Double?, digits: Int = 1) -> String {
    guard let value, value.isFinite else { return "–" }
    return format(value)
}

func renderMarkdown(_ report: Report) -> String {
    var text = "# outbox-compare results (\(report.mode) run)\n\n"
    text += "Measured \(report.machine.date) with `\(report.command)` in \(String(format: "%.0f", report.elapsedSeconds)) s. "
    text += "Load average at start \(report.machine.loadAverage), at end \(report.loadAverageAtEnd) (the machine is shared: compare ratios measured in the same round, not absolute numbers across runs).\n\n"
    text += "Machine: \(report.machine.processors) cores (\(report.machine.cpu)), \(String(format: "%.1f", Double(report.machine.memoryBytes) / 1_073_741_824)) GiB, \(report.machine.kernel), \(report.machine.swift).\n"
    text += "Data directory: `\(report.machine.dataDirectory)` on `\(report.machine.mount)`.\n\n"
    let settings = report.settings
    text += "Settings: \(settings.rounds) rounds of \(settings.secondsPerRound) s per system after a \(settings.warmupSeconds) s warm-up, order rotated every round; "
    text += "throughput = median of the rounds; p50/p99 over every operation of every round; **ours ÷ this** = median of the per-round ratios. "
    text += "Payload \(settings.payloadBytes) bytes; one enqueued entry is \(settings.recordBytes) bytes in our log, which is what the raw loops write per operation. "
    text += "With one producer SQLite runs twice: through GRDB's async API from a task (what a Swift-concurrency app calls) and through its blocking API on a dedicated thread (no hops: SQLite's best case); the goals are judged against the faster of the two. "
    text += "SQLite \(settings.sqliteVersion) through GRDB 7.10.0; pragmas read back: \(settings.sqlitePragmas.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")).\n\n"

    for comparison in report.comparisons {
        text += "## \(comparison.title) (`\(comparison.id)`)\n\n\(comparison.detail)\n\n"
        text += "| system | ops/s (median) | p50 µs | p99 µs | ours ÷ this |\n|---|---:|---:|---:|---:|\n"
        for result in comparison.results {
            let ratio = result.isOurs ? "—" : String(format: "%.2f×", result.oursOverThis ?? .nan)
            text += "| \(result.isOurs ? "**\(result.name)**" : result.name) | \(format(result.throughput)) | \(cell(result.p50Micros)) | \(cell(result.p99Micros)) | \(ratio) |\n"
        }
        text += "\n"
    }

    if let drain = report.drain {
        text += "## \(drain.title)\n\n\(drain.detail)\n\n| drainer | entries/s (median) | rounds | ours (default) ÷ this |\n|---|---:|---|---:|\n"
        for result in drain.results {
            let ratio = result.oursOverThis.map { String(format: "%.2f×", $0) } ?? "—"
            text += "| \(result.name) | \(format(result.throughput)) | \(result.roundThroughputs.map(format).joined(separator: ", ")) | \(ratio) |\n"
        }
        text += "\n"
    }

    if !report.recovery.isEmpty {
        text += "## Recovery: opening the log (engine)\n\n"
        text += "Logs of 256-byte records written with `buffered` puts and closed; each open verifies every CRC and rebuilds the index. Warm: files in the page cache (median of the opens); cold: one open after `posix_fadvise(DONTNEED)` on every segment. Index memory: heap bytes held by the open log ÷ live keys (malloc's count before and after the open).\n\n"
        text += "| records | MB scanned | segments | warm s | warm MB/s | cold s | cold MB/s | index B/key |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for result in report.recovery {
            text += "| \(short(Double(result.records))) | \(format(Double(result.bytes) / 1e6)) | \(result.segments) | \(String(format: "%.3f", result.warmSeconds)) | \(format(result.warmMBps)) | \(result.coldSeconds.map { String(format: "%.3f", $0) } ?? "–") | \(cell(result.coldMBps)) | \(cell(result.indexBytesPerKey)) |\n"
        }
        text += "\n"
    }

    if !report.depth.isEmpty {
        text += "## Per-enqueue cost against queue depth\n\n"
        text += "A queue preloaded with N pending 256-byte entries, then one producer enqueues. Ours durable: p50 of single durable enqueues; ours buffered: the same store opened with `enqueueDurability = .buffered` (the CPU cost, no sync). SQLite: synchronous=FULL, default page cache. JSON file: every enqueue re-encodes and rewrites the whole array (temp + fsync + rename), so it is measured only up to \(short(Double(report.settings.jsonDepths.max() ?? 0))). Store open = until LogOutboxStore.open returns at that depth, after a clean close (the store then answers enqueues; from its checkpoint it loads the queue in the background); loaded = until `summary()` answers (the whole queue in memory); heap = bytes held by the loaded store per pending entry (payloads excluded: they stay on disk).\n\n"
        text += "| pending | ours durable p50 µs | ours buffered mean µs | SQLite FULL p50 µs | JSON file p50 µs | store open s (warm / cold) | store loaded s (warm / cold) | store heap B/entry | SQLite open s | JSON load s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for result in report.depth {
            let open = String(format: "%.3f / %@", result.oursOpenSeconds, result.oursOpenColdSeconds.map { String(format: "%.3f", $0) } ?? "–")
            let loaded = "\(result.oursLoadedSeconds.map { String(format: "%.3f", $0) } ?? "–") / \(result.oursLoadedColdSeconds.map { String(format: "%.3f", $0) } ?? "–")"
            text += "| \(short(Double(result.depth))) | \(cell(result.oursDurableP50Micros)) | \(cell(result.oursBufferedMeanMicros)) | \(cell(result.sqliteFullP50Micros)) | \(cell(result.jsonP50Micros)) | \(open) | \(loaded) | \(cell(result.oursHeapBytesPerEntry)) | \(result.sqliteOpenSeconds.map { String(format: "%.3f", $0) } ?? "–") | \(result.jsonLoadSeconds.map { String(format: "%.3f", $0) } ?? "–") |\n"
        }
        text += "\n![per-enqueue cost against queue depth](benchmark-depth.svg)\n\n"
    }

    if !report.producers.isEmpty {
        text += "## Durable enqueue throughput against concurrent producers\n\n"
        text += "Each count: a fresh queue per round, \(report.settings.producerRounds) round(s) of \(report.settings.producerSeconds) s per system, side by side.\n\n"
        text += "| producers | ours enqueues/s | ours p50 µs | ours p99 µs | SQLite FULL enqueues/s | SQLite p50 µs | ours ÷ SQLite |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        for point in report.producers {
            text += "| \(point.producers) | \(format(point.ours)) | \(format(point.oursP50Micros)) | \(format(point.oursP99Micros)) | \(format(point.sqliteFull)) | \(format(point.sqliteP50Micros)) | \(String(format: "%.1f×", point.oursOverSQLite)) |\n"
        }
        text += "\n![durable throughput against producers](benchmark-producers.svg)\n\n"
    }

    if !report.goals.isEmpty {
        text += "## Goals\n\n| goal | measured | met? | margin |\n|---|---|---|---|\n"
        for goal in report.goals {
            let met = goal.met.map { $0 ? "**met**" : "**missed**" } ?? "—"
            text += "| \(goal.goal) | \(goal.measured) | \(met) | \(goal.margin) |\n"
        }
        text += "\n"
    }
    for note in report.notes { text += "- \(note)\n" }
    return text
}

// MARK: - Charts

func depthChart(_ report: Report) -> String? {
    guard report.depth.count > 1 else { return nil }
    var series = [
        SVGLineChart.Series(
            name: "ours, durable (p50)", color: "#1f6feb",
            points: report.depth.map { (Double($0.depth), $0.oursDurableP50Micros) }),
        SVGLineChart.Series(
            name: "ours, buffered enqueue: no sync (mean)", color: "#1f6feb",
            points: report.depth.map { (Double($0.depth), $0.oursBufferedMeanMicros) }, dashed: true),
    ]
    let sqlite = report.depth.compactMap { result in result.sqliteFullP50Micros.map { (Double(result.depth), $0) } }
    if !sqlite.isEmpty {
        series.append(SVGLineChart.Series(name: "SQLite WAL, synchronous=FULL (p50)", color: "#d29922", points: sqlite))
    }
    let json = report.depth.compactMap { result in result.jsonP50Micros.map { (Double(result.depth), $0) } }
    if !json.isEmpty {
        series.append(SVGLineChart.Series(name: "JSON file rewritten per change (p50)", color: "#cf222e", points: json))
    }
    let chart = SVGLineChart(
        title: "Per-enqueue cost against queue depth (256-byte entries, 1 producer)",
        subtitle: "\(report.mode) run, \(report.machine.date), \(report.machine.processors) cores; log–log",
        xLabel: "entries already pending", yLabel: "time per enqueue (log scale)", series: series,
        xTicks: report.depth.map { (Double($0.depth), short(Double($0.depth))) }, yFormat: formatMicros)
    return chart.render()
}

func producersChart(_ report: Report) -> String? {
    guard report.producers.count > 1 else { return nil }
    var series = [
        SVGLineChart.Series(
            name: "ours (LogOutboxStore), durable", color: "#1f6feb",
            points: report.producers.map { (Double($0.producers), $0.ours) }),
        SVGLineChart.Series(
            name: "SQLite WAL, synchronous=FULL (GRDB async)", color: "#d29922",
            points: report.producers.map { (Double($0.producers), $0.sqliteFull) }),
    ]
    if let raw = report.comparisons.first(where: { $0.id == "durable.1p.enqueue" })?.results.first(where: { $0.name.hasPrefix("raw") }) {
        series.append(
            SVGLineChart.Series(
                name: "raw write+fdatasync, 1 record per sync", color: "#57606a",
                points: report.producers.map { (Double($0.producers), raw.throughput) }, dashed: true))
    }
    if let group = report.comparisons.first(where: { $0.id == "durable.64p.enqueue" })?.results.first(where: { $0.name.hasPrefix("raw") }) {
        series.append(
            SVGLineChart.Series(
                name: "raw: 64 records per write+fdatasync", color: "#8250df",
                points: report.producers.map { (Double($0.producers), group.throughput) }, dashed: true))
    }
    let chart = SVGLineChart(
        title: "Durable enqueues per second against concurrent producers",
        subtitle: "\(report.mode) run, \(report.machine.date), \(report.machine.processors) cores; log–log; 256-byte entries",
        xLabel: "concurrent producers", yLabel: "durable enqueues/s (log scale)", series: series,
        xTicks: report.producers.map { (Double($0.producers), "\($0.producers)") })
    return chart.render()
}

/// 74 → "74 µs", 2500 → "2.5 ms", 1_500_000 → "1.5 s".
func formatMicros(_ micros: Double) -> String {
    if micros >= 1e6 { return short(micros / 1e6) + " s" }
    if micros >= 1e3 { return short(micros / 1e3) + " ms" }
    return short(micros) + " µs"
}
