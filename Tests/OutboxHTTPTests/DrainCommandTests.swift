import CLITestSupport
import Foundation
import Testing

/// `outbox enqueue` then `outbox drain` against a real loopback server.
@Suite("outbox drain", .serialized, .timeLimit(.minutes(1)))
struct DrainCommandTests {
    @Test("drain --until-empty delivers every enqueued entry once per key, retrying 503s, and reports it in JSON")
    func drainUntilEmpty() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-drain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await LoopbackServer { request, earlier in
            // Every first attempt fails with 503 and Retry-After: 0.
            earlier == 0 ? .init(status: 503, headers: ["Retry-After": "0"]) : .init(status: 201, body: #"{"id":"srv"}"#)
        }
        defer { server.stop() }
        var keys: [String] = []
        for index in 0..<5 {
            let enqueue = try await OutboxTool.run(
                ["enqueue", root, "--count", "1", "--size", "40", "--endpoint", "PUT /items/\(index)", "--user", "dana"])
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
            let line = try #require(enqueue.stdoutLines.first)
            keys.append(String(line.split(separator: " ")[1]))
        }
        let drain = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--user", "dana", "--until-empty", "--json", "--timeout", "30"])
        #expect(drain.status == 0, "\(drain.stderr)")
        let output = try #require(drain.stdoutLines.first)
        let summary = try #require(OutboxTool.jsonObject(output))
        #expect(summary["delivered"] as? Int == 5)
        #expect(summary["retried"] as? Int == 5)
        #expect(summary["remaining"] as? Int == 0)
        // Two requests per entry, both with that entry's key.
        for (index, key) in keys.enumerated() {
            let sent = server.requests.filter { $0.path == "/items/\(index)" }
            #expect(sent.count == 2)
            #expect(sent.allSatisfy { $0.method == "PUT" && $0.headers["idempotency-key"] == key })
        }

        let list = try await OutboxTool.run(["list", root, "--user", "dana", "--json"])
        #expect(list.stdoutLines.isEmpty)
    }

    @Test("a queue that cannot drain before the timeout exits 1 with what remains; bad base URLs are refused")
    func remainingAndBadArguments() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-drain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await LoopbackServer { _, _ in .init(status: 503, headers: ["Retry-After": "3600"]) }
        defer { server.stop() }
        _ = try await OutboxTool.run(["enqueue", root, "--count", "2", "--size", "10"])
        let drain = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--until-empty", "--timeout", "1", "--json"])
        #expect(drain.status == 1)
        let output = try #require(drain.stdoutLines.first)
        let summary = try #require(OutboxTool.jsonObject(output))
        #expect(summary["remaining"] as? Int == 2)
        #expect(summary["delivered"] as? Int == 0)

        let bad = try await OutboxTool.run(["drain", root, "--base-url", "ftp://nowhere"])
        #expect(bad.status == 64)
        #expect(bad.stderrLines.count == 1)
    }
}
