import Foundation

// The SVG charts of an outbox-compare run: per-enqueue cost against queue
// depth, and durable throughput against concurrent producers.

func depthChart(_ report: Report) -> String? {
    guard report.depth.count > 1 else { return nil }
    // Each line: its name, its color, whether it is dashed, and its figure at a depth (nil: not measured there).
    let lines: [(String, String, Bool, (DepthResult) -> Double?)] = [
        ("ours, durable (p50)", "#1f6feb", false, { $0.oursDurableP50Micros }),
        ("ours, buffered enqueue: no sync (mean)", "#1f6feb", true, { $0.oursBufferedMeanMicros }),
        ("SQLite WAL, synchronous=FULL (p50)", "#d29922", false, { $0.sqliteFullP50Micros }),
        ("JSON file rewritten per change (p50)", "#cf222e", false, { $0.jsonP50Micros }),
    ]
    let series = lines.compactMap { name, color, dashed, figure -> SVGLineChart.Series? in
        let points = report.depth.compactMap { result in figure(result).map { (Double(result.depth), $0) } }
        return points.isEmpty ? nil : SVGLineChart.Series(name: name, color: color, points: points, dashed: dashed)
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
    // The raw limits, flat lines at their throughput in these comparisons.
    let limits = [
        ("durable.1p.enqueue", "raw write+fdatasync, 1 record per sync", "#57606a"),
        ("durable.64p.enqueue", "raw: 64 records per write+fdatasync", "#8250df"),
    ]
    for (id, name, color) in limits {
        guard let raw = report.comparisons.first(where: { $0.id == id })?.results.first(where: { $0.name.hasPrefix("raw") })
        else { continue }
        series.append(
            SVGLineChart.Series(
                name: name, color: color, points: report.producers.map { (Double($0.producers), raw.throughput) }, dashed: true))
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
