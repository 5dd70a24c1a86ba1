import CLITestSupport
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

/// `outbox inspect`'s HTTP side without a browser: who it answers, what
/// it refuses (another site's name, actions without `--allow-actions`,
/// actions another site's page could send), the actions themselves, and
/// the held request for a newer picture with every `after` a client can send.
@Suite("outbox inspect over HTTP", .serialized, .timeLimit(.minutes(5)))
struct InspectorHTTPTests {
    /// A queue whose drain left a refused write and its dependent quarantined.
    static func drainedStuckQueue() async throws -> (root: String, parent: String, child: String) {
        let queue = try await InspectorFixture.stuckQueue(count: 2)
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore())
        #expect(try await InspectorFixture.drain(queue.root, server).status == 3)
        await server.stop()
        return queue
    }

    static func status(_ root: String, _ id: String) async throws -> String {
        let explained = try await OutboxTool.run(["explain", root, id, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(explained.stdout.utf8)) as? [String: Any]
        return object?["status"] as? String ?? "unknown"
    }

    @Test("it answers requests addressed to 127.0.0.1 or localhost, and refuses any other name (DNS rebinding)")
    func loopbackNamesOnly() async throws {
        let (root, _, _) = try await InspectorFixture.stuckQueue(count: 1)
        let inspector = try await InspectorFixture.inspect(root)
        let port = inspector.baseURL.port!
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST"] {
            let answer = try await InspectorFixture.request(port: port, "GET", "/api/queue", host: host)
            #expect(answer.status == 200 && answer.body.contains(#""pending":3"#), "\(host): \(answer)")
        }
        for host in [
            "evil.example:\(port)", "127.0.0.1.evil.example", "", "[::2]:\(port)", "localhost:evil.example", "[::1]evil.example",
            "localhost.", "127.1", "localhost:123456",
        ] {
            let answer = try await InspectorFixture.request(port: port, "GET", "/", host: host)
            #expect(answer.status == 421 || answer.status == 400, "\(host): \(answer)")
            #expect(!answer.body.contains("<html"), "\(host)")
        }
        let page = try await InspectorFixture.request(port: port, "GET", "/")
        #expect(page.status == 200 && page.body.contains(#"<script src="/inspector.js">"#))
        #expect(try await InspectorFixture.request(port: port, "GET", "/api/entries/not-an-id").status == 400)
        await inspector.stop()
    }

    @Test("the API answers the page only: without its header, or from another origin, nothing is read and the queue is not opened")
    func pageOnly() async throws {
        let (root, _, _) = try await InspectorFixture.stuckQueue(count: 1)
        let inspector = try await InspectorFixture.inspect(root)
        let port = inspector.baseURL.port!
        for path in ["/api/queue", "/api/entries/\(UUID().uuidString)"] {
            let bare = try await InspectorFixture.request(port: port, "GET", path, fromPage: false)
            #expect(bare.status == 403 && !bare.body.contains("snapshot"), "\(path): \(bare)")
            for origin in ["http://evil.example", "http://localhost:1", "file://localhost", "null", "http://127.0.0.1:\(port).evil"] {
                let foreign = try await InspectorFixture.request(port: port, "GET", path, headers: ["Origin: \(origin)"])
                #expect(foreign.status == 403, "\(path) from \(origin): \(foreign)")
            }
        }
        let own = try await InspectorFixture.request(port: port, "GET", "/api/queue", headers: ["Origin: http://127.0.0.1:\(port)"])
        #expect(own.status == 200, "\(own)")
        // The page's files need no header: a browser fetches them as any page.
        #expect(try await InspectorFixture.request(port: port, "GET", "/inspector.js", fromPage: false).status == 200)
        await inspector.stop()
    }

    @Test("an entry is found by its id in any form the page sends: a UUID, local:, or local%3A")
    func entryIDForms() async throws {
        let (root, parent, _) = try await Self.drainedStuckQueue()
        let inspector = try await InspectorFixture.inspect(root)
        let port = inspector.baseURL.port!
        for form in [parent, "local:\(parent)", "local%3A\(parent)", "local%3a\(parent)"] {
            let answer = try await InspectorFixture.request(port: port, "GET", "/api/entries/\(form)")
            #expect(answer.status == 200 && answer.body.contains(#""status":"quarantined""#), "\(form): \(answer)")
        }
        await inspector.stop()
    }

    @Test("a port already taken is refused with an error, not waited on forever; so is it for outbox serve")
    func portTaken() async throws {
        let (root, _, _) = try await InspectorFixture.stuckQueue(count: 1)
        let inspector = try await InspectorFixture.inspect(root)
        let port = inspector.baseURL.port!
        let second = try await OutboxTool.run(["inspect", root, "--port", "\(port)"], stopAfter: .seconds(60))
        #expect(second.status != 0 && !second.stopped, "\(second.stdout) \(second.stderr)")
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(port)"), "\(second.stderr)")
        let serve = try await OutboxTool.run(["serve", "--port", "\(port)", "--in-memory-keys"], stopAfter: .seconds(60))
        #expect(serve.status != 0 && !serve.stopped, "\(serve.stdout) \(serve.stderr)")
        await inspector.stop()
    }

    @Test("a queue it cannot read is refused at the start: a wrong key, a directory that is not there")
    func refusedAtStart() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-inspect-key-\(UUID().uuidString)").path
        let right = root + ".right-key", wrong = root + ".wrong-key"
        try Data((0..<32).map { UInt8($0) }).write(to: URL(fileURLWithPath: right))
        try Data((0..<32).map { UInt8(255 - $0) }).write(to: URL(fileURLWithPath: wrong))
        defer { for file in [right, wrong] { try? FileManager.default.removeItem(atPath: file) } }
        let enqueue = try await OutboxTool.run(["enqueue", root, "--key-file", right, "--endpoint", "POST /x", "--payload", "secret"])
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        let refused = try await OutboxTool.run(["inspect", root, "--key-file", wrong, "--port", "0"], stopAfter: .seconds(60))
        #expect(refused.status != 0 && !refused.stopped, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("wrongKey") || refused.stderr.contains("wrong key"), "\(refused.stderr)")
        #expect(!refused.stdout.contains("http://"))
        let missing = try await OutboxTool.run(["inspect", root + "-missing", "--port", "0"], stopAfter: .seconds(60))
        #expect(missing.status != 0 && missing.stderr.contains("no such outbox directory"), "\(missing.stderr)")
    }

    @Test("read-only unless --allow-actions: a retry is refused and changes nothing")
    func readOnlyByDefault() async throws {
        let (root, parent, _) = try await Self.drainedStuckQueue()
        let inspector = try await InspectorFixture.inspect(root)
        let port = inspector.baseURL.port!
        let answer = try await InspectorFixture.request(
            port: port, "POST", "/api/entries/\(parent)/retry")
        #expect(answer.status == 403 && answer.body.contains("--allow-actions"), "\(answer)")
        await inspector.stop()
        #expect(try await Self.status(root, parent) == "quarantined")
    }

    @Test("with --allow-actions, an action needs the page's header and no other site's Origin; then retry and discard work")
    func actions() async throws {
        let (root, parent, child) = try await Self.drainedStuckQueue()
        let inspector = try await InspectorFixture.inspect(root, ["--allow-actions"])
        let port = inspector.baseURL.port!
        let bare = try await InspectorFixture.request(port: port, "POST", "/api/entries/\(parent)/retry", fromPage: false)
        #expect(bare.status == 403, "\(bare)")
        let foreign = try await InspectorFixture.request(
            port: port, "POST", "/api/entries/\(parent)/retry", headers: ["Origin: http://evil.example"])
        #expect(foreign.status == 403, "\(foreign)")
        let retried = try await InspectorFixture.request(
            port: port, "POST", "/api/entries/\(parent)/retry",
            headers: ["Origin: http://127.0.0.1:\(port)"])
        #expect(retried.status == 200 && retried.body.contains(child), "the dependent comes back with it: \(retried)")
        let discarded = try await InspectorFixture.request(
            port: port, "POST", "/api/entries/\(child)/discard")
        #expect(discarded.status == 200, "\(discarded)")
        let unknown = try await InspectorFixture.request(
            port: port, "POST", "/api/entries/\(UUID().uuidString)/discard")
        #expect(unknown.status == 409 && unknown.body.contains("error"), "\(unknown)")
        await inspector.stop()
        #expect(try await Self.status(root, parent) == "pending")
        #expect(try await Self.status(root, child) == "unknown")
    }

    @Test("a request for a newer picture is held until one exists; any other `after` is answered at once")
    func heldForANewerPicture() async throws {
        let (root, _, _) = try await InspectorFixture.stuckQueue(count: 1)
        let inspector = try await InspectorFixture.inspect(root)
        let port = inspector.baseURL.port!
        let first = try await InspectorFixture.request(port: port, "GET", "/api/queue")
        let object = try JSONSerialization.jsonObject(with: Data(first.body.utf8)) as? [String: Any]
        let takenAt = try #require((object?["snapshot"] as? [String: Any])?["takenAt"] as? Double)
        let newer = try await InspectorFixture.request(port: port, "GET", "/api/queue?after=\(takenAt)")
        let newerObject = try JSONSerialization.jsonObject(with: Data(newer.body.utf8)) as? [String: Any]
        let newerTakenAt = try #require((newerObject?["snapshot"] as? [String: Any])?["takenAt"] as? Double)
        #expect(newerTakenAt > takenAt)
        for after in ["abc", "-1", "1e308", "NaN", "inf", "99999999999999999999999", "%00"] {
            let answer = try await InspectorFixture.request(port: port, "GET", "/api/queue?after=\(after)")
            #expect(answer.status == 200 && answer.body.contains(#""snapshot""#), "after=\(after): \(answer)")
        }
        await inspector.stop()
    }
}
