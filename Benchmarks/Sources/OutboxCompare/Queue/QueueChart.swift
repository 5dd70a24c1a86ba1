import Foundation

/// The queue rows' chart: elements per second of each contender on each
/// throughput row, as horizontal bars on a log scale (the peers span four
/// decades). The latency rows are left to the table: every contender runs
/// them at the same pace.
func queueChart(_ report: Report) -> String? {
    let rows = report.comparisons.filter { $0.id.hasPrefix("queue.") && !$0.id.hasSuffix(".latency") }
    let values = rows.flatMap { $0.results.map(\.throughput) }.filter { $0 > 0 }
    guard let highest = values.max(), let lowest = values.min() else { return nil }
    let names = rows.flatMap { $0.results.map(\.name) }.reduce(into: [String]()) { names, name in
        let kind = contenderKind(name)
        if !names.contains(kind) { names.append(kind) }
    }
    let colors = ["#1f6feb", "#8250df", "#d29922", "#cf222e", "#57606a"]
    let (left, right, top, barHeight, gap) = (250.0, 90.0, 70.0, 13.0, 14.0)
    let width = 860.0
    let plotWidth = width - left - right
    let decadeLow = floor(log10(lowest)), decadeHigh = ceil(log10(highest))
    func x(_ value: Double) -> Double { left + (log10(value) - decadeLow) / max(decadeHigh - decadeLow, 1) * plotWidth }
    let groupHeight = Double(names.count) * barHeight + gap
    let height = top + Double(rows.count) * groupHeight + 60
    var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="20" y="26" font-size="16" font-weight="bold">Durable queues: elements per second (256-byte elements)</text>
        <text x="20" y="46" fill="#555">\(svgEscape("\(report.mode) run, \(report.machine.date), \(report.machine.processors) cores; log scale; median of \(report.settings.rounds) rounds"))</text>

        """
    var decade = decadeLow
    while decade <= decadeHigh {
        let position = x(pow(10, decade))
        svg += "<line x1=\"\(r(position))\" y1=\"\(r(top - 8))\" x2=\"\(r(position))\" y2=\"\(r(height - 50))\" stroke=\"#ddd\"/>\n"
        svg += "<text x=\"\(r(position))\" y=\"\(r(height - 34))\" text-anchor=\"middle\" fill=\"#555\">\(short(pow(10, decade)))/s</text>\n"
        decade += 1
    }
    for (rowIndex, row) in rows.enumerated() {
        let groupTop = top + Double(rowIndex) * groupHeight
        svg += "<text x=\"\(r(left - 8))\" y=\"\(r(groupTop + Double(names.count) * barHeight / 2 + 4))\" text-anchor=\"end\">\(svgEscape(row.title.replacingOccurrences(of: "queue, ", with: "")))</text>\n"
        for result in row.results where result.throughput > 0 {
            let slot = Double(names.firstIndex(of: contenderKind(result.name)) ?? 0)
            let y = groupTop + slot * barHeight
            let color = colors[Int(slot) % colors.count]
            svg += "<rect x=\"\(r(left))\" y=\"\(r(y))\" width=\"\(r(max(1, x(result.throughput) - left)))\" height=\"\(r(barHeight - 2))\" fill=\"\(color)\"/>\n"
            svg += "<text x=\"\(r(x(result.throughput) + 4))\" y=\"\(r(y + barHeight - 4))\" font-size=\"10\" fill=\"#333\">\(short(result.throughput))</text>\n"
        }
    }
    for (index, name) in names.enumerated() {
        let legendX = 20 + Double(index) * 205
        svg += "<rect x=\"\(r(legendX))\" y=\"\(r(height - 22))\" width=\"12\" height=\"12\" fill=\"\(colors[index % colors.count])\"/>\n"
        svg += "<text x=\"\(r(legendX + 16))\" y=\"\(r(height - 12))\">\(svgEscape(name))</text>\n"
    }
    return svg + "</svg>\n"
}

/// A contender's name without its durability, so one color follows it
/// across the written and durable rows: "SQLite FULL" and "SQLite NORMAL"
/// are both "SQLite (WAL)".
private func contenderKind(_ name: String) -> String {
    if name.hasPrefix("ours") { return "ours (DurableQueue)" }
    if name.hasPrefix("Tape") { return "Tape-style QueueFile" }
    if name.hasPrefix("SQLite") { return "SQLite (WAL)" }
    if name.hasPrefix("RocksDB") { return name.split(separator: " ").prefix(2).joined(separator: " ") }
    return name
}

private func r(_ value: Double) -> String { String(format: "%.1f", value) }

