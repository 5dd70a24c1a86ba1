import Foundation

/// Keyed requests through the middleware with keys in PostgreSQL, on 1, 2
/// and 4 `outbox serve --postgres` processes sharing one database, beside
/// one process with in-memory keys, in one run (rounds interleaved).
///
/// Each PostgreSQL server process also keeps the reference API's writes in
/// the database, recording each key's response in the write's own
/// transaction: a request costs a claim (`INSERT … ON CONFLICT`, one
/// commit), the write's transaction (`BEGIN`, an insert, the key's
/// `UPDATE`, `COMMIT`) and the middleware's no-op completion. The load is N
/// wrk instances at once, one per process, each with 1/N of the connections;
/// their requests per second are added up, their latencies are the worst
/// instance's.
struct PostgresRow: Codable, Sendable {
    /// `0` for the in-memory baseline (one process), else the number of PostgreSQL server processes.
    var processes: Int
    var connections: Int
    var rounds: [LoadResult]

    var label: String { processes == 0 ? "in-memory keys, 1 process" : "PostgreSQL, \(processes) process\(processes == 1 ? "" : "es")" }

    func median(_ value: (LoadResult) -> Double) -> Double {
        let sorted = rounds.map(value).sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

enum PostgresScenario {
    static let processCounts = [0, 1, 2, 4]

    static func run(_ options: Options, url: String) throws -> [PostgresRow] {
        let scriptDirectory = temporaryDirectory("wrk-postgres")
        defer { try? FileManager.default.removeItem(atPath: scriptDirectory) }
        let script = scriptDirectory + "/keys.lua"
        try Load.script.write(toFile: script, atomically: true, encoding: .utf8)
        var rows: [PostgresRow] = []
        for connections in options.postgresConnections {
            for processes in processCounts { rows.append(PostgresRow(processes: processes, connections: connections, rounds: [])) }
        }
        for round in 1...options.rounds {
            for index in rows.indices {
                let row = rows[index]
                let scope = "bench-\(UUID().uuidString.lowercased())"
                let arguments = row.processes == 0 ? ["--in-memory-keys"] : ["--postgres", url, "--postgres-scope", scope]
                let servers = try (0..<max(1, row.processes)).map { _ in try ServeProcess(outbox: options.outbox, arguments: arguments) }
                defer { for server in servers { server.stop() } }
                let result = try Load.runAll(
                    ports: servers.map(\.port), connections: row.connections, seconds: options.seconds, runID: "pg\(round)-\(index)",
                    scriptPath: script)
                progress(
                    "round \(round): \(row.label), \(row.connections) connections: \(Int(result.requestsPerSecond)) rps, "
                        + "p50 \(result.p50Milliseconds) ms, p99 \(result.p99Milliseconds) ms, errors \(result.errors)")
                rows[index].rounds.append(result)
            }
        }
        return rows
    }

    static func markdown(_ rows: [PostgresRow]) -> [String] {
        guard !rows.isEmpty else { return [] }
        var lines = [
            "**PostgreSQL keys** — POST /messages, a new Idempotency-Key per request; N `outbox serve --postgres` processes on one "
                + "database (keys and writes in it, each response recorded in its write's transaction) beside one in-memory process; "
                + "one wrk per process; median of \(rows.first?.rounds.count ?? 0) interleaved round(s):",
            "",
            "| connections | servers | rps | ÷ in-memory | p50 / p99 ms (worst wrk) | errors |",
            "|---|---|---|---|---|---|",
        ]
        for connections in Array(Set(rows.map(\.connections))).sorted() {
            let baseline = rows.first { $0.connections == connections && $0.processes == 0 }?.median(\.requestsPerSecond) ?? 0
            for row in rows where row.connections == connections {
                let rps = row.median(\.requestsPerSecond)
                let ratio = baseline > 0 ? String(format: "%.2f", rps / baseline) : "–"
                let errors = row.rounds.map(\.errors).reduce(0, +)
                lines.append(
                    "| \(connections) | \(row.label) | \(Int(rps)) | \(ratio) | "
                        + String(format: "%.2f / %.2f", row.median(\.p50Milliseconds), row.median(\.p99Milliseconds)) + " | \(errors) |")
            }
        }
        return lines
    }
}

extension Load {
    /// One wrk per port at once, the connections shared out among them:
    /// requests per second and errors added up, the worst p50 and p99.
    static func runAll(ports: [Int], connections: Int, seconds: Int, runID: String, scriptPath: String) throws -> LoadResult {
        let share = max(1, connections / ports.count)
        let runs = try ports.enumerated().map { index, port -> (Process, Pipe) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
            process.arguments = [
                "-t\(min(2, share))", "-c\(share)", "-d\(seconds)s", "--latency", "-s", scriptPath,
                "http://127.0.0.1:\(port)/messages", "--", "\(runID)-\(index)",
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            return (process, pipe)
        }
        var total = LoadResult(requestsPerSecond: 0, p50Milliseconds: 0, p99Milliseconds: 0, errors: 0)
        for (process, pipe) in runs {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let one = try parse(String(decoding: data, as: UTF8.self))
            total.requestsPerSecond += one.requestsPerSecond
            total.errors += one.errors
            total.p50Milliseconds = max(total.p50Milliseconds, one.p50Milliseconds)
            total.p99Milliseconds = max(total.p99Milliseconds, one.p99Milliseconds)
        }
        return total
    }
}
