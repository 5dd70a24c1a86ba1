import Foundation
import OutboxBenchSupport

/// The crash section as Markdown: one table, ours ÷ SQLite per workload.
func renderCrashMarkdown(_ results: [CrashResult], settings: CrashSettings, command: String, date: String, load: String) -> String {
    var text = "# outbox-compare crash section\n\n"
    text += "Measured \(date) with `\(command)`; load average \(load).\n\n"
    text += "Each worker is this benchmark binary run again by itself, killed with SIGKILL at a seeded random moment "
    text += "\(settings.killAfter.lowerBound)–\(settings.killAfter.upperBound) s after its spawn (seed \(settings.seed)) and restarted at once, "
    text += "for \(settings.seconds) s of wall time per contender and workload. Ours: `LogOutboxStore`\((settings.preallocation ?? 0) > 0 ? " with \((settings.preallocation ?? 0) >> 10) KiB of segment zero-filled ahead (`preallocation`)" : ""), enqueues and outcomes `durable` "
    text += "(attempt start `written`), `OutboxDispatcher` with default settings and `HTTPOutboxHandler`. SQLite: GRDB, WAL, `synchronous=FULL`, "
    text += "the seeds' table, one transaction per enqueue, per claim of up to 64 rows and per acknowledgement, 4 deliveries at a time "
    text += "over the same HTTP transport. The server is the loopback reference server (Idempotency-Key middleware, keys in memory). "
    text += "Per second figures are per **wall** second, restarts included; a restart latency is from the spawn to the worker's "
    text += "report of its first acknowledged enqueue (or confirmed delivery), over the lives that got that far (`n`; the others "
    text += "were killed first). `flush` starts with \(settings.flushBacklog) entries pending, so the drainer, not the producer, sets the pace. `restart.N` rows: N entries pending before the first restart, \(settings.restarts) lives each killed "
    text += "0–0.2 s after its first acknowledged enqueue and first delivery.\n\n"
    text += "Checked after every run: every acknowledged entry is still stored or was delivered; after the flush runs an unkilled "
    text += "drain delivers the rest and every acknowledged entry's key must have been applied exactly once, no key twice.\n\n"
    text += "| workload | contender | ack/s | delivered/s | ours ÷ SQLite | pending at start → end | lives | restart→open p50 / p95 / max ms | restart→ack p50 / p95 / max ms (n) | restart→delivery p50 / p95 / max ms (n) | re-sent | violations |\n"
    text += "|---|---|---:|---:|---:|---|---:|---|---|---|---:|---|\n"
    for result in results {
        let rival = results.first { $0.workload == result.workload && $0.isOurs != result.isOurs }
        var ratio = "—"
        if result.isOurs, let rival {
            let delivers = result.workload == "flush"
            let mine = delivers ? result.deliveredPerSecond : result.acknowledgedPerSecond
            let theirs = delivers ? rival.deliveredPerSecond : rival.acknowledgedPerSecond
            if result.workload.hasPrefix("restart."), let a = result.restartToAcknowledged.p95, let b = rival.restartToAcknowledged.p95 {
                ratio = String(format: "restart p95 %.2f×", a / b)
            } else if theirs > 0 {
                ratio = String(format: "%.2f×", mine / theirs)
            }
        }
        text += "| \(result.workload) | \(result.isOurs ? "**\(result.contender)**" : result.contender) "
        let restartRow = result.workload.hasPrefix("restart.")
        text += "| \(restartRow ? "—" : "\(Int(result.acknowledgedPerSecond.rounded()))") "
        text += "| \(restartRow || result.restartToDelivered == nil ? "—" : "\(Int(result.deliveredPerSecond.rounded()))") "
        let end = result.backlog + result.acknowledged - result.delivered
        text += "| \(ratio) | \(short(Double(result.backlog))) → \(short(Double(end))) | \(result.lives) | \(triple(result.restartToOpen, count: false)) | \(triple(result.restartToAcknowledged, count: true)) "
        text += "| \(result.restartToDelivered.map { triple($0, count: true) } ?? "—") | \(result.resent.map(String.init) ?? "—") "
        text += "| \(result.violations.isEmpty ? "0" : "**\(result.violations.joined(separator: "; "))**") |\n"
    }
    text += "\nRatios: ack/s for the enqueue rows, confirmed deliveries per wall second for `flush`, "
    text += "and for `restart.N` ours' p95 restart→ack divided by SQLite's (below 1: ours is faster).\n"
    return text
}

private func triple(_ summary: LatencySummary, count: Bool) -> String {
    func ms(_ value: Double?) -> String {
        guard let value else { return "–" }
        return value < 10 ? String(format: "%.1f", value) : String(format: "%.0f", value)
    }
    return "\(ms(summary.p50)) / \(ms(summary.p95)) / \(ms(summary.max))" + (count ? " (\(summary.count))" : "")
}

/// Restart to first acknowledged enqueue against the backlog, per contender
/// (and, from `before`, an earlier run's p50s, dashed and lighter).
func crashRestartChart(_ results: [CrashResult], date: String, before: CrashReport? = nil) -> String? {
    let restarts = results.filter { $0.workload.hasPrefix("restart.") }
    guard Set(restarts.map(\.backlog)).count > 1 else { return nil }
    var series: [SVGLineChart.Series] = []
    if let before {
        let day = String(before.machine.date.prefix(10))
        let earlier = before.results.filter { $0.workload.hasPrefix("restart.") }
        for (isOurs, color, label) in [(true, "#8cb4f0", "ours"), (false, "#e6c27a", "SQLite FULL")] {
            let mine = earlier.filter { $0.isOurs == isOurs }.sorted { $0.backlog < $1.backlog }
            series.append(
                SVGLineChart.Series(
                    name: "\(label), run of \(day): to first ack (p50)", color: color,
                    points: mine.compactMap { result in result.restartToAcknowledged.p50.map { (Double(result.backlog), $0) } },
                    dashed: true))
        }
    }
    for (isOurs, color, label) in [(true, "#1f6feb", "ours, durable"), (false, "#d29922", "SQLite FULL")] {
        let mine = restarts.filter { $0.isOurs == isOurs }.sorted { $0.backlog < $1.backlog }
        series.append(
            SVGLineChart.Series(
                name: "\(label): to first ack (p50)", color: color,
                points: mine.compactMap { result in result.restartToAcknowledged.p50.map { (Double(result.backlog), $0) } }))
        series.append(
            SVGLineChart.Series(
                name: "\(label): to first ack (max)", color: color,
                points: mine.compactMap { result in result.restartToAcknowledged.max.map { (Double(result.backlog), $0) } },
                dashed: true))
    }
    let backlogs = restarts.map { Double($0.backlog) }
    if let least = backlogs.min(), let most = backlogs.max() {
        series.append(SVGLineChart.Series(name: "goal: 50 ms", color: "#888", points: [(least, 50), (most, 50)], dashed: true))
    }
    let chart = SVGLineChart(
        title: "Restart after SIGKILL: time to the first acknowledged enqueue against the backlog",
        subtitle: "outbox-compare --only crash, \(date); spawn of the killed app's process to its first durable enqueue; log–log",
        xLabel: "entries pending at the kill", yLabel: "milliseconds (log scale)", series: series,
        xTicks: Array(Set(restarts.map(\.backlog))).sorted().map { (Double($0), short(Double($0))) },
        yFormat: { value in value < 10 ? String(format: "%.1f ms", value) : String(format: "%.0f ms", value) })
    return chart.render()
}

/// What `benchmark-crash.json` holds.
struct CrashReport: Codable {
    var settings: CrashSettings
    var machine: MachineDescription
    var results: [CrashResult]
}
