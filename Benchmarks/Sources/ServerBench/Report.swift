import Foundation

/// Everything one run measured, written as Markdown, JSON and an SVG chart.
struct BenchReport: Codable {
    var command: String
    var date = ISO8601DateFormatter().string(from: Date())
    var machine = BenchReport.machineLine()
    var load: [LoadRow] = []
    var stored: [StoredRow] = []
    var descriptors: [DescriptorRow] = []
    var postgres: [PostgresRow] = []
    var seconds = 0.0

    func commandLine() -> String {
        "Command: `cd Benchmarks && swift build -c release --product outbox && \(command.trimmingCharacters(in: .whitespaces))`; \(date); \(machine); \(Int(seconds)) s in all."
    }

    /// The PostgreSQL section alone (`--postgres-only`).
    func postgresMarkdown() -> String {
        ([commandLine(), ""] + PostgresScenario.markdown(postgres)).joined(separator: "\n") + "\n"
    }

    func writePostgres(to directory: String) throws {
        try postgresMarkdown().write(toFile: directory + "/server-benchmark-postgres.md", atomically: true, encoding: .utf8)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: directory + "/server-benchmark-postgres.json"))
    }

    static func machineLine() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), load average \(load) at start"
    }

    func row(_ connections: Int, _ mode: ServerMode) -> LoadRow? { load.first { $0.connections == connections && $0.mode == mode } }

    func markdown() -> String {
        var lines: [String] = []
        lines.append(commandLine())
        lines.append("")
        let rounds = load.first?.rounds.count ?? 0
        lines.append("**Load** — POST /messages, a new Idempotency-Key per request, wrk on loopback; median of \(rounds) interleaved round(s):")
        lines.append("")
        lines.append("| connections | no middleware rps | in-memory keys rps | durable keys rps | in-memory ÷ none | durable ÷ in-memory | p50 / p99 ms (none · in-memory · durable) | errors |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for connections in Array(Set(load.map(\.connections))).sorted() {
            guard let none = row(connections, .none), let memory = row(connections, .memory), let durable = row(connections, .durable) else { continue }
            let rps = [none, memory, durable].map { $0.median(\.requestsPerSecond) }
            let latency = [none, memory, durable].map {
                String(format: "%.2f / %.2f", $0.median(\.p50Milliseconds), $0.median(\.p99Milliseconds))
            }.joined(separator: " · ")
            let errors = [none, memory, durable].flatMap(\.rounds).map(\.errors).reduce(0, +)
            lines.append(
                "| \(connections) | \(Int(rps[0])) | \(Int(rps[1])) | \(Int(rps[2])) | \(String(format: "%.2f", rps[1] / rps[0])) | "
                    + "\(String(format: "%.2f", rps[2] / rps[1])) | \(latency) | \(errors) |")
        }
        lines.append("")
        lines.append("**Stored keys** — a durable key store (`LogIdempotencyKeyStore`) of N completed keys (a durable claim and response each); `outbox serve --keys-dir` restarted on it:")
        lines.append("")
        lines.append("| keys | log on disk | restart to listening, s (each run) | resident memory | resident bytes per stored key |")
        lines.append("|---|---|---|---|---|")
        for row in stored {
            let restarts = row.restartSeconds.map { String(format: "%.3f", $0) }.joined(separator: ", ")
            lines.append(
                "| \(row.keys) | \(row.logBytes / 1_048_576) MiB (\(row.logBytes / Int64(row.keys)) B/key) | \(restarts) | "
                    + "\(row.residentBytes / 1_048_576) MiB | \(Int(row.residentBytesPerKey.rounded())) |")
        }
        lines.append("")
        lines.append("**Descriptor limit** — `ulimit -n 128`, 150 idle clients connected, then one POST with curl (30 s at most):")
        lines.append("")
        lines.append("| settings | answer | waited | server CPU meanwhile |")
        lines.append("|---|---|---|---|")
        for row in descriptors {
            lines.append("| \(row.settings) | \(row.answeredAfter == nil ? "none (\(row.status))" : row.status) | \(String(format: "%.2f", row.waitSeconds)) s | \(String(format: "%.2f", row.cpuSeconds)) s |")
        }
        if !postgres.isEmpty {
            lines.append("")
            lines += PostgresScenario.markdown(postgres)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func write(to directory: String) throws {
        try markdown().write(toFile: directory + "/server-benchmark.md", atomically: true, encoding: .utf8)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: directory + "/server-benchmark.json"))
        try chart().write(toFile: directory + "/server-load.svg", atomically: true, encoding: .utf8)
    }

    /// Grouped bars: median requests per second by connections, one bar per server.
    func chart() -> String {
        let groups = Array(Set(load.map(\.connections))).sorted()
        let modes = ServerMode.allCases
        let colors = ["#9e9e9e", "#1f77b4", "#d62728"]
        let maximum = max(1, load.map { $0.median(\.requestsPerSecond) }.max() ?? 1)
        let (width, height, left, bottom, top) = (640.0, 360.0, 70.0, 50.0, 40.0)
        let plotHeight = height - bottom - top
        let groupWidth = (width - left - 20) / Double(max(1, groups.count))
        let barWidth = groupWidth * 0.8 / Double(modes.count)
        var svg = [
            #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(Int(width))" height="\#(Int(height))" font-family="sans-serif" font-size="12">"#,
            #"<rect width="100%" height="100%" fill="white"/>"#,
            #"<text x="\#(Int(width / 2))" y="20" text-anchor="middle" font-size="14">outbox serve: POST /messages, median requests/s (wrk, loopback)</text>"#,
        ]
        for tick in 0...4 {
            let value = maximum * Double(tick) / 4
            let y = top + plotHeight - plotHeight * Double(tick) / 4
            svg.append(#"<line x1="\#(left)" y1="\#(y)" x2="\#(width - 20)" y2="\#(y)" stroke="rgb(224,224,224)"/>"#)
            svg.append(#"<text x="\#(left - 6)" y="\#(y + 4)" text-anchor="end">\#(Int(value))</text>"#)
        }
        for (groupIndex, connections) in groups.enumerated() {
            let x0 = left + groupWidth * Double(groupIndex) + groupWidth * 0.1
            for (modeIndex, mode) in modes.enumerated() {
                let value = row(connections, mode)?.median(\.requestsPerSecond) ?? 0
                let barHeight = plotHeight * value / maximum
                let x = x0 + barWidth * Double(modeIndex)
                svg.append(#"<rect x="\#(x)" y="\#(top + plotHeight - barHeight)" width="\#(barWidth - 2)" height="\#(barHeight)" fill="\#(colors[modeIndex])"/>"#)
                svg.append(#"<text x="\#(x + barWidth / 2)" y="\#(top + plotHeight - barHeight - 4)" text-anchor="middle" font-size="10">\#(Int(value))</text>"#)
            }
            svg.append(#"<text x="\#(x0 + groupWidth * 0.4)" y="\#(height - bottom + 18)" text-anchor="middle">\#(connections) connection\#(connections == 1 ? "" : "s")</text>"#)
        }
        for (modeIndex, mode) in modes.enumerated() {
            let x = left + Double(modeIndex) * 170
            svg.append(#"<rect x="\#(x)" y="\#(height - 18)" width="12" height="12" fill="\#(colors[modeIndex])"/>"#)
            svg.append(#"<text x="\#(x + 16)" y="\#(height - 8)">\#(mode.rawValue)</text>"#)
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }
}
