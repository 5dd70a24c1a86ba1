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
        // What is left, and why.
        #expect((summary["left"] as? [String: Int])?["failed: HTTP 503"] == 2, "\(summary)")
        #expect(summary["nextRetryAt"] is String)

        let text = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--until-empty", "--timeout", "1"])
        #expect(text.status == 1)
        #expect(text.stdoutLines.contains { $0.hasPrefix("left: 2 × failed: HTTP 503; next retry at ") }, "\(text.stdout)")

        let bad = try await OutboxTool.run(["drain", root, "--base-url", "ftp://nowhere"])
        #expect(bad.status == 64)
        #expect(bad.stderrLines.count == 1)
    }

    @Test("a server that is down: the drain keeps its deadline, counts the attempts as not sent, leaves nothing in flight and says why")
    func serverDown() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-drain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let placeholder = try RawSocketServer { _, _ in .closeBeforeResponse }
        let port = placeholder.port
        placeholder.stop()  // nothing listens there now
        _ = try await OutboxTool.run(["enqueue", root, "--count", "3", "--size", "10", "--user", "eve"])
        let drain = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(port)", "--user", "eve", "--until-empty", "--timeout", "1", "--json"])
        #expect(drain.status == 1)
        let line = try #require(drain.stdoutLines.first)
        let summary = try #require(OutboxTool.jsonObject(line))
        #expect(summary["remaining"] as? Int == 3)
        #expect((summary["notSent"] as? Int ?? 0) >= 3)
        #expect(summary["quarantined"] as? Int == 0)
        let left = try #require(summary["left"] as? [String: Int])
        #expect(left.keys.allSatisfy { $0.hasPrefix("failed: not sent: cannot connect to host") }, "\(left)")
        // Nothing stays in flight, and no attempt was used up.
        let list = try await OutboxTool.run(["list", root, "--user", "eve", "--json"])
        let entries = list.stdoutLines.compactMap(OutboxTool.jsonObject)
        #expect(entries.count == 3)
        #expect(entries.allSatisfy { $0["status"] as? String == "failed" && $0["attempts"] as? Int == 0 }, "\(list.stdout)")
    }
}
