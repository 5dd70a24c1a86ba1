import Foundation
import IdempotencyKeyMiddleware
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The three servers compared under load.
enum ServerMode: String, Codable, CaseIterable, Sendable {
    case none = "no middleware"
    case memory = "in-memory keys"
    case durable = "durable keys"

    func arguments(keysDirectory: String) -> [String] {
        switch self {
        case .none: ["--no-idempotency"]
        case .memory: ["--in-memory-keys"]
        case .durable: ["--keys-dir", keysDirectory]
        }
    }
}

struct LoadRow: Codable, Sendable {
    var connections: Int
    var mode: ServerMode
    /// Every round's result, in order.
    var rounds: [LoadResult]

    func median(_ value: (LoadResult) -> Double) -> Double {
        let sorted = rounds.map(value).sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

enum LoadScenario {
    static func run(_ options: Options) throws -> [LoadRow] {
        let scriptDirectory = temporaryDirectory("wrk")
        defer { try? FileManager.default.removeItem(atPath: scriptDirectory) }
        let script = scriptDirectory + "/keys.lua"
        try Load.script.write(toFile: script, atomically: true, encoding: .utf8)
        var rows: [LoadRow] = []
        for connections in options.connections {
            for mode in ServerMode.allCases { rows.append(LoadRow(connections: connections, mode: mode, rounds: [])) }
        }
        // Rounds interleaved: each round runs every cell once, so drift in
        // the machine's load hits all of them alike.
        for round in 1...options.rounds {
            for index in rows.indices {
                let row = rows[index]
                let keys = temporaryDirectory("keys")
                defer { try? FileManager.default.removeItem(atPath: keys) }
                let server = try ServeProcess(outbox: options.outbox, arguments: row.mode.arguments(keysDirectory: keys))
                defer { server.stop() }
                let result = try Load.run(
                    port: server.port, connections: row.connections, seconds: options.seconds, runID: "r\(round)-\(index)", scriptPath: script)
                progress("round \(round): \(row.mode.rawValue), \(row.connections) connections: \(Int(result.requestsPerSecond)) rps, p50 \(result.p50Milliseconds) ms, p99 \(result.p99Milliseconds) ms, errors \(result.errors)")
                rows[index].rounds.append(result)
            }
        }
        return rows
    }
}

struct StoredRow: Codable, Sendable {
    var keys: Int
    var logBytes: Int64
    /// Spawn to "listening on", every restart.
    var restartSeconds: [Double]
    var residentBytes: Int
    /// (resident − resident with no keys) ÷ keys.
    var residentBytesPerKey: Double
}

enum StoredKeysScenario {
    static func run(_ options: Options) async throws -> [StoredRow] {
        let empty = temporaryDirectory("empty")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let baseline = try ServeProcess(outbox: options.outbox, arguments: ["--keys-dir", empty])
        let baselineBytes = baseline.residentBytes
        baseline.stop()
        var rows: [StoredRow] = []
        for count in options.storedKeys {
            let directory = temporaryDirectory("stored")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let logBytes = try await populate(directory, keys: count)
            var restarts: [Double] = []
            var resident = 0
            for _ in 0..<options.restarts {
                let server = try ServeProcess(outbox: options.outbox, arguments: ["--keys-dir", directory])
                restarts.append(server.startSeconds)
                resident = server.residentBytes
                server.stop()
            }
            let row = StoredRow(
                keys: count, logBytes: logBytes, restartSeconds: restarts, residentBytes: resident,
                residentBytesPerKey: Double(resident - baselineBytes) / Double(count))
            progress("\(count) keys: restart \(restarts.map { String(format: "%.3f", $0) }) s, RSS \(resident / 1_048_576) MiB, \(Int(row.residentBytesPerKey)) B/key")
            rows.append(row)
        }
        return rows
    }

    /// Stores `keys` completed keys the way the middleware does (a durable
    /// claim, then a durable response), 256 requests at a time.
    static func populate(_ directory: String, keys: Int) async throws -> Int64 {
        let store = try await LogIdempotencyKeyStore.open(at: FilePath(directory))
        let now = Date()
        let expiresAt = now.addingTimeInterval(24 * 3600)
        let claim = IdempotencyClaim(owner: "bench", staleAfter: .seconds(60), expiresAt: expiresAt)
        let body = Array(#"{"id":"msg-123456"}"#.utf8)
        let workers = 256
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    for index in stride(from: worker, to: keys, by: workers) {
                        let key = "bench-\(UUID().uuidString.lowercased())-\(index)"
                        var fingerprint = [UInt8](repeating: 0, count: 32)
                        withUnsafeBytes(of: index) { fingerprint.replaceSubrange(0..<8, with: $0) }
                        _ = try await store.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
                        try await store.complete(
                            key: key, response: StoredResponse(status: 201, headers: ["content-type": "application/json"], body: body),
                            now: now, expiresAt: expiresAt)
                    }
                }
            }
            try await group.waitForAll()
        }
        let bytes = store.bytesOnDisk
        try await store.close()
        return bytes
    }
}

struct DescriptorRow: Codable, Sendable {
    var settings: String
    /// Seconds until a new request was answered (nil: not within the wait).
    var answeredAfter: Double?
    var status: String
    /// CPU seconds the server used during the wait.
    var cpuSeconds: Double
    var waitSeconds: Double
}

enum DescriptorScenario {
    /// `ulimit -n 128`, 150 idle clients, then one request with curl (30 s at most).
    static func run(_ options: Options) throws -> [DescriptorRow] {
        let cases: [(String, [String])] = [
            ("limits on (idle timeout 2 s, cap = limit − 64)", ["--in-memory-keys", "--idle-timeout", "2s"]),
            ("limits off (Hummingbird's defaults)", ["--in-memory-keys", "--idle-timeout", "0", "--header-timeout", "0", "--body-timeout", "0", "--max-connections", "1000000"]),
        ]
        var rows: [DescriptorRow] = []
        for (settings, arguments) in cases {
            let server = try ServeProcess(outbox: options.outbox, arguments: arguments, descriptorLimit: 128)
            let idle = openIdleConnections(150, port: server.port)
            let cpuBefore = server.cpuSeconds
            let started = Date()
            let output = try ServerBench.run("/usr/bin/curl", [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-X", "POST",
                "-H", "Idempotency-Key: descriptor-probe", "-H", "Content-Type: application/json",
                "--data", #"{"conversation":"c","text":"probe"}"#, "http://127.0.0.1:\(server.port)/messages",
            ])
            let waited = Date().timeIntervalSince(started)
            let cpu = server.cpuSeconds - cpuBefore
            for fd in idle { close(fd) }
            server.stop()
            let answered = output.hasPrefix("2")
            rows.append(DescriptorRow(
                settings: settings, answeredAfter: answered ? waited : nil, status: output.isEmpty ? "none" : output, cpuSeconds: cpu,
                waitSeconds: waited))
            progress("\(settings): status \(output), after \(String(format: "%.2f", waited)) s, CPU \(String(format: "%.2f", cpu)) s")
        }
        return rows
    }
}
