import Foundation
import OutboxBenchSupport

/// Judges `report`, prints it, and with `output` writes `NAME.md` and
/// `NAME.json` there (and, with `charts`, the depth and producers charts).
func finish(_ report: Report, startedAt: UInt64, writingAs name: String, to output: String?, charts: Bool) throws {
    var report = report
    report.goals = evaluateGoals(report)
    report.elapsedSeconds = Double(monotonicNanoseconds() - startedAt) / 1e9
    report.loadAverageAtEnd = MachineDescription.loadAverageNow()
    let markdown = renderMarkdown(report)
    print(markdown)
    guard let output else { return }
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
        positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    try encoder.encode(report).write(to: URL(fileURLWithPath: output + "/\(name).json"))
    try Data(markdown.utf8).write(to: URL(fileURLWithPath: output + "/\(name).md"))
    var written = ["\(name).md", ".json"]
    if charts, let chart = depthChart(report) {
        try Data(chart.utf8).write(to: URL(fileURLWithPath: output + "/benchmark-depth.svg"))
        written.append("benchmark-depth.svg")
    }
    if charts, let chart = producersChart(report) {
        try Data(chart.utf8).write(to: URL(fileURLWithPath: output + "/benchmark-producers.svg"))
        written.append("benchmark-producers.svg")
    }
    progress("wrote \(output)/" + written.joined(separator: ", "))
}
