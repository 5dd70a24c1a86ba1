import Foundation
import OutboxBenchSupport

private func cell(_ value: Double?, digits: Int = 1) -> String {
    guard let value, value.isFinite else { return "–" }
    return format(value)
}

/// Seconds to the millisecond, "–" when not measured.
private func seconds(_ value: Double?) -> String {
    value.map { String(format: "%.3f", $0) } ?? "–"
}

/// A Markdown table, each line ending in a newline: the header, the rule
/// (`r` in `align` right-aligns that column, any other letter leaves it
/// left-aligned) and one line per row.
private func markdownTable(_ header: [String], align: String, _ rows: [[String]]) -> String {
    precondition(header.count == align.count && rows.allSatisfy { $0.count == header.count })
    let rule = "|" + align.map { $0 == "r" ? "---:" : "---" }.joined(separator: "|") + "|\n"
    func line(_ cells: [String]) -> String { "| " + cells.joined(separator: " | ") + " |\n" }
    return line(header) + rule + rows.map(line).joined()
}

func renderMarkdown(_ report: Report) -> String {
    var text = markdownIntroduction(report)
    for comparison in report.comparisons { text += comparisonSection(comparison) }
    if let drain = report.drain { text += drainSection(drain) }
    if !report.recovery.isEmpty { text += recoverySection(report.recovery) }
    if !report.depth.isEmpty { text += depthSection(report.depth, settings: report.settings) }
    if !report.producers.isEmpty { text += producersSection(report.producers, settings: report.settings) }
    if !report.goals.isEmpty { text += goalsSection(report.goals) }
    for note in report.notes { text += "- \(note)\n" }
    return text
}

/// The title, when and where it was measured, and how.
private func markdownIntroduction(_ report: Report) -> String {
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
    return text
}

/// A section of the report: its heading, the paragraph that says what was
/// measured (if any), its table, then a blank line or the chart drawn from it.
private func markdownSection(
    _ heading: String, about paragraph: String? = nil, table: String, chart: (alt: String, file: String)? = nil
) -> String {
    "## \(heading)\n\n" + (paragraph.map { $0 + "\n\n" } ?? "") + table
        + (chart.map { "\n![\($0.alt)](\($0.file))\n\n" } ?? "\n")
}

/// One side-by-side comparison: a row per system.
private func comparisonSection(_ comparison: Comparison) -> String {
    let table = markdownTable(
        ["system", "ops/s (median)", "p50 µs", "p99 µs", "ours ÷ this"], align: "lrrrr",
        comparison.results.map { result in
            [
                result.isOurs ? "**\(result.name)**" : result.name, format(result.throughput), cell(result.p50Micros),
                cell(result.p99Micros), result.isOurs ? "—" : String(format: "%.2f×", result.oursOverThis ?? .nan),
            ]
        })
    return markdownSection("\(comparison.title) (`\(comparison.id)`)", about: comparison.detail, table: table)
}

/// The drain: a row per drainer, with every round's throughput.
private func drainSection(_ drain: Comparison) -> String {
    let table = markdownTable(
        ["drainer", "entries/s (median)", "rounds", "ours (default) ÷ this"], align: "lrlr",
        drain.results.map { result in
            [
                result.name, format(result.throughput), result.roundThroughputs.map(format).joined(separator: ", "),
                result.oursOverThis.map { String(format: "%.2f×", $0) } ?? "—",
            ]
        })
    return markdownSection(drain.title, about: drain.detail, table: table)
}

/// Opening the log: a row per log size.
private func recoverySection(_ recovery: [RecoveryResult]) -> String {
    let table = markdownTable(
        ["records", "MB scanned", "segments", "warm s", "warm MB/s", "cold s", "cold MB/s", "index B/key"],
        align: "rrrrrrrr",
        recovery.map { result in
            [
                short(Double(result.records)), format(Double(result.bytes) / 1e6), "\(result.segments)",
                seconds(result.warmSeconds), format(result.warmMBps), seconds(result.coldSeconds), cell(result.coldMBps),
                cell(result.indexBytesPerKey),
            ]
        })
    return markdownSection(
        "Recovery: opening the log (engine)",
        about: "Logs of 256-byte records written with `buffered` puts and closed; each open verifies every CRC and rebuilds the index. Warm: files in the page cache (median of the opens); cold: one open after `posix_fadvise(DONTNEED)` on every segment. Index memory: heap bytes held by the open log ÷ live keys (malloc's count before and after the open).",
        table: table)
}

/// Per-enqueue cost and open times: a row per queue depth, then its chart.
private func depthSection(_ depth: [DepthResult], settings: Settings) -> String {
    let table = markdownTable(
        [
            "pending", "ours durable p50 µs", "ours buffered mean µs", "SQLite FULL p50 µs", "JSON file p50 µs",
            "store open s (warm / cold)", "store loaded s (warm / cold)", "store heap B/entry", "SQLite open s",
            "JSON load s",
        ],
        align: "rrrrrrrrrr",
        depth.map { result in
            [
                short(Double(result.depth)), cell(result.oursDurableP50Micros), cell(result.oursBufferedMeanMicros),
                cell(result.sqliteFullP50Micros), cell(result.jsonP50Micros),
                "\(seconds(result.oursOpenSeconds)) / \(seconds(result.oursOpenColdSeconds))",
                "\(seconds(result.oursLoadedSeconds)) / \(seconds(result.oursLoadedColdSeconds))",
                cell(result.oursHeapBytesPerEntry), seconds(result.sqliteOpenSeconds), seconds(result.jsonLoadSeconds),
            ]
        })
    return markdownSection(
        "Per-enqueue cost against queue depth",
        about: "A queue preloaded with N pending 256-byte entries, then one producer enqueues. Ours durable: p50 of single durable enqueues; ours buffered: the same store opened with `enqueueDurability = .buffered` (the CPU cost, no sync). SQLite: synchronous=FULL, default page cache. JSON file: every enqueue re-encodes and rewrites the whole array (temp + fsync + rename), so it is measured only up to \(short(Double(settings.jsonDepths.max() ?? 0))). Store open = until LogOutboxStore.open returns at that depth, after a clean close (the store then answers enqueues; from its checkpoint it loads the queue in the background); loaded = until `summary()` answers (the whole queue in memory); heap = bytes held by the loaded store per pending entry (payloads excluded: they stay on disk).",
        table: table, chart: ("per-enqueue cost against queue depth", "benchmark-depth.svg"))
}

/// Durable enqueue throughput: a row per producer count, then its chart.
private func producersSection(_ producers: [ProducerPoint], settings: Settings) -> String {
    let table = markdownTable(
        [
            "producers", "ours enqueues/s", "ours p50 µs", "ours p99 µs", "SQLite FULL enqueues/s", "SQLite p50 µs",
            "ours ÷ SQLite",
        ],
        align: "rrrrrrr",
        producers.map { point in
            [
                "\(point.producers)", format(point.ours), format(point.oursP50Micros), format(point.oursP99Micros),
                format(point.sqliteFull), format(point.sqliteP50Micros), String(format: "%.1f×", point.oursOverSQLite),
            ]
        })
    return markdownSection(
        "Durable enqueue throughput against concurrent producers",
        about: "Each count: a fresh queue per round, \(settings.producerRounds) round(s) of \(settings.producerSeconds) s per system, side by side.",
        table: table, chart: ("durable throughput against producers", "benchmark-producers.svg"))
}

/// Each goal, what was measured and whether it was met.
private func goalsSection(_ goals: [Goal]) -> String {
    let table = markdownTable(
        ["goal", "measured", "met?", "margin"], align: "llll",
        goals.map { goal in
            [goal.goal, goal.measured, goal.met.map { $0 ? "**met**" : "**missed**" } ?? "—", goal.margin]
        })
    return markdownSection("Goals", table: table)
}
