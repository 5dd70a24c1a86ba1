import CLITestSupport
import Foundation
import Testing

/// `outbox enqueue` then `outbox drain` against a real loopback server.
@Suite("outbox drain", .serialized, .timeLimit(.minutes(5)))
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
        // The drain returns as soon as the queue is empty (about a second
        // alone); the deadline is only a bound, wide enough for two cores
        // busy with the rest of the suite (a full run once took over 30 s).
        let drain = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--user", "dana", "--until-empty", "--json", "--timeout", "120"])
        #expect(drain.status == 0, "\(drain.stderr)")
        let output = try #require(drain.stdoutLines.first)
        let summary = try #require(OutboxTool.jsonObject(output))
        #expect(summary["delivered"] as? Int == 5)
        #expect(summary["waitingToRetry"] as? Int == 5)
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
        // The deadline leaves the first attempt 9 s (the last second is the
        // drain's margin for recording outcomes): its 503 must come back in
        // time on a loaded machine too, or it is recorded as interrupted
        // (with 3 s, it was, in two loaded full runs of four).
        let drain = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--until-empty", "--timeout", "10", "--json"])
        #expect(drain.status == 1)
        let output = try #require(drain.stdoutLines.first)
        let summary = try #require(OutboxTool.jsonObject(output))
        #expect(summary["remaining"] as? Int == 2)
        #expect(summary["delivered"] as? Int == 0)
        // What is left, and why: the entries go in order, so the
        // second waits behind the first, which the server keeps refusing.
        #expect(summary["left"] as? [String: Int] == ["waitingToRetry: unavailable, HTTP 503": 1, "pending: not attempted yet": 1], "\(summary)")
        #expect(summary["nextRetryAt"] is String)

        let text = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--until-empty", "--timeout", "10"])
        #expect(text.status == 1)
        #expect(text.stdoutLines.contains { $0.hasPrefix("left: ") && $0.contains("1 × waitingToRetry: unavailable, HTTP 503") && $0.contains("; next retry at ") },
                "\(text.stdout)")

        let bad = try await OutboxTool.run(["drain", root, "--base-url", "ftp://nowhere"])
        #expect(bad.status == 64)
        #expect(bad.stderrLines.count == 1)
    }

    @Test("entries left in conflict or quarantined: drain exits 3 (not 0) and lists each with its request and reason, in text and JSON; replays are counted")
    func needsAttentionExitsThree() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-drain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await LoopbackServer { request, _ in
            switch request.path {
            case "/items/0": .init(status: 409, body: #"{"error":"the item was changed by someone else"}"#)
            case "/items/2": .init(status: 404, body: #"{"error":"no such list"}"#)
            default: .init(status: 201, headers: ["Idempotent-Replayed": "true"], body: #"{"id":"i1"}"#)
            }
        }
        defer { server.stop() }
        for index in 0..<3 {
            let enqueue = try await OutboxTool.run(
                ["enqueue", root, "--count", "1", "--size", "10", "--endpoint", "PUT /items/\(index)", "--user", "fay"])
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
        }
        let base = "http://127.0.0.1:\(server.port)"
        let drain = try await OutboxTool.run(["drain", root, "--base-url", base, "--user", "fay", "--until-empty", "--json"])
        #expect(drain.status == 3, "\(drain.stdout)\(drain.stderr)")
        let line = try #require(drain.stdoutLines.first)
        let summary = try #require(OutboxTool.jsonObject(line))
        #expect(summary["delivered"] as? Int == 1)
        #expect(summary["replayed"] as? Int == 1)
        #expect(summary["remaining"] as? Int == 0)
        #expect(summary["needsAttention"] as? Int == 2)
        let attention = try #require(summary["attention"] as? [[String: Any]])
        let byRequest = Dictionary(uniqueKeysWithValues: attention.map { ($0["request"] as? String ?? "", $0) })
        #expect(byRequest["PUT /items/0"]?["status"] as? String == "conflict")
        #expect(byRequest["PUT /items/0"]?["httpStatus"] as? Int == 409)
        #expect((byRequest["PUT /items/0"]?["reason"] as? String)?.contains("changed by someone else") == true)
        #expect(byRequest["PUT /items/2"]?["status"] as? String == "quarantined")
        #expect(byRequest["PUT /items/2"]?["cause"] as? String == "permanent")
        #expect(byRequest["PUT /items/0"]?["cause"] as? String == "conflict")
        #expect((byRequest["PUT /items/2"]?["reason"] as? String)?.hasPrefix("refused: HTTP 404") == true)

        // Nothing left to send, but still not "done": the text says why.
        let again = try await OutboxTool.run(["drain", root, "--base-url", base, "--user", "fay"])
        #expect(again.status == 3)
        let lines = again.stdoutLines.filter { $0.hasPrefix("needs attention: ") }
        #expect(lines.count == 2, "\(again.stdout)")
        #expect(lines.contains { $0.contains("PUT /items/0 (conflict): conflict: HTTP 409: ") }, "\(lines)")
        #expect(lines.contains { $0.contains("PUT /items/2 (quarantined): refused: HTTP 404") }, "\(lines)")

        // `list --json` gives the failure as its parts: cause, status, message.
        let list = try await OutboxTool.run(["list", root, "--user", "fay", "--json", "--status", "quarantined"])
        let quarantined = try #require(list.stdoutLines.compactMap(OutboxTool.jsonObject).first, "\(list.stdout)")
        let failure = try #require(quarantined["lastFailure"] as? [String: Any], "\(quarantined)")
        #expect(failure["cause"] as? String == "permanent")
        #expect(failure["httpStatus"] as? Int == 404)
        #expect((failure["message"] as? String)?.contains("no such list") == true)
        #expect(failure["parent"] == nil)


        // A dependent of the quarantined entry: quarantined at once, its
        // failure naming the parent and what became of it.
        let parent = try #require(quarantined["id"] as? String)
        let dependent = try await OutboxTool.run(
            ["enqueue", root, "--count", "1", "--size", "10", "--user", "fay", "--depends-on", parent])
        #expect(dependent.status == 0, "\(dependent.stderr)")
        let listed = try await OutboxTool.run(["list", root, "--user", "fay", "--json", "--status", "quarantined"])
        let dependency = listed.stdoutLines.compactMap(OutboxTool.jsonObject).compactMap { $0["lastFailure"] as? [String: Any] }
            .first { $0["cause"] as? String == "dependency" }
        #expect(dependency?["parent"] as? String == parent, "\(listed.stdout)")
        #expect(dependency?["parentFate"] as? String == "quarantined")
        let last = try await OutboxTool.run(["drain", root, "--base-url", base, "--user", "fay", "--json"])
        let named = try #require(last.stdoutLines.first.flatMap(OutboxTool.jsonObject)?["attention"] as? [[String: Any]])
        let blocked = named.first { $0["cause"] as? String == "dependency" }
        #expect(blocked?["parent"] as? String == parent, "\(last.stdout)")
        #expect(blocked?["parentFate"] as? String == "quarantined")
    }

    @Test("an answer lost after the request was sent: list shows since when the outcome is unknown; past --key-retention the entry is not resent but needs attention (exit 3)")
    func keyRetentionGuard() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-drain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try RawSocketServer { _, _ in .closeBeforeResponse }
        defer { server.stop() }
        _ = try await OutboxTool.run(["enqueue", root, "--count", "1", "--size", "10", "--user", "gus"])
        let base = "http://127.0.0.1:\(server.port)"
        let first = try await OutboxTool.run(["drain", root, "--base-url", base, "--user", "gus", "--json"])
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let list = try await OutboxTool.run(["list", root, "--user", "gus", "--json"])
        let entry = try #require(list.stdoutLines.compactMap(OutboxTool.jsonObject).first)
        #expect(entry["outcomeUnknownSince"] is String, "\(list.stdout)")
        let sent = server.captures.count

        // The server keeps keys for 0.0001 hours (less than one lease): too late to resend blindly.
        let late = try await OutboxTool.run(
            ["drain", root, "--base-url", base, "--user", "gus", "--key-retention", "0.0001", "--until-empty", "--timeout", "5"])
        #expect(late.status == 3, "\(late.stdout)\(late.stderr)")
        #expect(late.stdoutLines.contains { $0.contains("(conflict): outcome unknown, and the server may have forgotten the key") },
                "\(late.stdout)")
        #expect(server.captures.count == sent, "it was resent")
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
        #expect((summary["notSent"] as? Int ?? 0) >= 1)
        #expect(summary["quarantined"] as? Int == 0)
        let left = try #require(summary["left"] as? [String: Int])
        // In order: the first meets the outage, the others wait behind it.
        #expect(left.filter { $0.key.hasPrefix("waitingToRetry: notSent: cannot connect to host") }.values.reduce(0, +) == 1, "\(left)")
        #expect(left["pending: not attempted yet"] == 2, "\(left)")
        // Nothing stays in flight, and no attempt was used up.
        let list = try await OutboxTool.run(["list", root, "--user", "eve", "--json"])
        let entries = list.stdoutLines.compactMap(OutboxTool.jsonObject)
        #expect(entries.count == 3)
        #expect(entries.allSatisfy { $0["status"] as? String != "inFlight" && $0["attempts"] as? Int == 0 }, "\(list.stdout)")
        #expect(entries.filter { $0["status"] as? String == "waitingToRetry" }.count == 1, "\(list.stdout)")
        // Refused connections are definite: nothing can have been applied.
        #expect(entries.allSatisfy { $0["outcomeUnknownSince"] is NSNull }, "\(list.stdout)")
    }

    @Test("drain --concurrency 16 --unscoped-delivery concurrent keeps 16 requests in flight; in order (the default) one, and says why")
    func concurrencyOnTheWire() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-drain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (delivery, together, held) in [("concurrent", 16, 16), ("in-order", 2, 1)] {
            // Answered once `together` requests are held at once, or alone
            // after a wait: a drain keeping fewer in flight still finishes.
            let server = try RawSocketServer { _, _ in .answerWhenHeld(together: together, atMost: .milliseconds(delivery == "concurrent" ? 5000 : 100)) }
            defer { server.stop() }
            let enqueue = try await OutboxTool.run(["enqueue", root, "--count", "32", "--size", "10", "--user", delivery])
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
            let drain = try await OutboxTool.run(
                ["drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--user", delivery, "--until-empty",
                 "--concurrency", "16", "--unscoped-delivery", delivery, "--json", "--timeout", "60"])
            #expect(drain.status == 0, "\(delivery): \(drain.stderr)")
            let line = try #require(drain.stdoutLines.first)
            let summary = try #require(OutboxTool.jsonObject(line))
            #expect(summary["delivered"] as? Int == 32)
            #expect(summary["unscopedDelivery"] as? String == delivery)
            #expect(server.mostHeldAtOnce == held, "\(delivery): requests held at once: \(server.mostHeldAtOnce)")
            #expect(drain.stderr.contains("--unscoped-delivery concurrent sends up to 16 at once") == (delivery == "in-order"), "\(drain.stderr)")
        }
    }
}
