import Foundation

/// One wrk run: POST /messages with a new Idempotency-Key per request.
struct LoadResult: Codable, Sendable {
    var requestsPerSecond: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var errors: Int
}

enum Load {
    /// wrk's Lua script: every thread mints its own keys, `RUN-THREAD-N`.
    static let script = """
        local counter = 0
        local prefix = ""
        local body = '{"conversation":"c1","text":"hello from the load test"}'
        local threads = {}
        function setup(thread)
          thread:set("tid", #threads + 1)
          table.insert(threads, thread)
        end
        function init(args)
          prefix = args[1] .. "-" .. tid .. "-"
        end
        function request()
          counter = counter + 1
          return wrk.format("POST", "/messages", {["Content-Type"] = "application/json", ["Idempotency-Key"] = prefix .. counter}, body)
        end
        """

    static func run(port: Int, connections: Int, seconds: Int, runID: String, scriptPath: String) throws -> LoadResult {
        let threads = min(2, connections)
        let output = try ServerBench.run("/usr/bin/wrk", [
            "-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", scriptPath,
            "http://127.0.0.1:\(port)/messages", "--", runID,
        ])
        return try parse(output)
    }

    static func parse(_ output: String) throws -> LoadResult {
        var result = LoadResult(requestsPerSecond: 0, p50Milliseconds: 0, p99Milliseconds: 0, errors: 0)
        for raw in output.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), let value = parts.last.flatMap({ Double($0) }) { result.requestsPerSecond = value }
            if line.hasPrefix("50%"), let value = parts.last.flatMap(milliseconds) { result.p50Milliseconds = value }
            if line.hasPrefix("99%"), let value = parts.last.flatMap(milliseconds) { result.p99Milliseconds = value }
            if line.hasPrefix("Non-2xx or 3xx responses:"), let value = parts.last.flatMap({ Int($0) }) { result.errors += value }
            if line.hasPrefix("Socket errors:") {
                result.errors += parts.compactMap { Int($0.filter(\.isNumber)) }.reduce(0, +)
            }
        }
        guard result.requestsPerSecond > 0 else { throw ServeProcess.Failure(description: "cannot read wrk's output:\n\(output)") }
        return result
    }

    /// "850.00us", "1.23ms", "1.01s" → milliseconds.
    static func milliseconds(_ text: Substring) -> Double? {
        for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return nil
    }
}
