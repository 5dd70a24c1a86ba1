import CLITestSupport
import Foundation
import OutboxReferenceServer
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `outbox serve --postgres`: several real server processes on one database
/// answer as one. The ledger (`GET /ledger`, from the database) counts every
/// write applied, whichever process applied it.
@Suite(
    "outbox serve --postgres: exactly once across server processes", .serialized, .timeLimit(.minutes(5)),
    .needsPostgres)
struct PostgresServeTests {
    struct Answer: Sendable {
        var status: Int
        var body: String
        var replayed: Bool
        var problem: String?
    }

    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 120
        return URLSession(configuration: configuration)
    }()

    static func post(_ server: URL, key: String, text: String) async throws -> Answer {
        var request = URLRequest(url: server.appendingPathComponent("messages"))
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"conversation":"c","text":"\#(text)"}"#.utf8)
        request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        let body = String(decoding: data, as: UTF8.self)
        let problem = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["type"] as? String
        return Answer(
            status: http.statusCode, body: body, replayed: http.value(forHTTPHeaderField: "Idempotent-Replayed") == "true",
            problem: problem?.components(separatedBy: "/").last)
    }

    static func ledger(_ server: URL) async throws -> ReferenceLedger {
        let (data, _) = try await session.data(from: server.appendingPathComponent("ledger"))
        return try JSONDecoder().decode(ReferenceLedger.self, from: data)
    }

    static func serverArguments(scope: String, _ extra: [String] = []) async throws -> [String] {
        ["--postgres", try await PostgresTestDatabase.requireURL(), "--postgres-scope", scope] + extra
    }

    @Test("one key sent to two server processes at once, twelve times over: each applied once, every answer the first or 409")
    func concurrentSameKey() async throws {
        let scope = "test-race-\(UUID().uuidString.lowercased())"
        // Writes are held 300 ms behind the middleware, so the two requests overlap.
        let arguments = try await Self.serverArguments(scope: scope, ["--debug-hold-writes", "300ms"])
        let a = try await ServeProcess(arguments)
        let b = try await ServeProcess(arguments)
        let keys = (0..<12).map { "race-\($0)-\(UUID().uuidString)" }
        let first = try await withThrowingTaskGroup(of: (String, Answer).self) { group in
            for key in keys {
                for server in [a.baseURL, b.baseURL] { group.addTask { (key, try await Self.post(server, key: key, text: "hello \(key)")) } }
            }
            return try await group.reduce(into: [String: [Answer]]()) { $0[$1.0, default: []].append($1.1) }
        }
        var firstBodies: [String: String] = [:]
        for key in keys {
            let answers = try #require(first[key])
            let ran = answers.filter { $0.status == 201 && !$0.replayed }
            #expect(ran.count == 1, "\(key): \(answers)")
            firstBodies[key] = ran.first?.body
            for answer in answers where !(answer.status == 201 && !answer.replayed) {
                let conflict = answer.status == 409 && answer.problem == "in-progress"
                let replay = answer.status == 201 && answer.replayed && answer.body == ran.first?.body
                #expect(conflict || replay, "\(key): \(answer)")
            }
        }
        // Sent again to both: the first answer, byte for byte, from either
        // process. No 409 is left: every key's first 201 went out after its
        // response was stored (the middleware settles a key before it
        // answers), and every request above has been answered.
        for key in keys {
            for server in [a.baseURL, b.baseURL] {
                let answer = try await Self.post(server, key: key, text: "hello \(key)")
                #expect(answer.status == 201 && answer.replayed && answer.body == firstBodies[key], "\(key): \(answer)")
            }
        }
        for server in [a.baseURL, b.baseURL] {
            let ledger = try await Self.ledger(server)
            #expect(ledger.messages == keys.count)
            #expect(Set(ledger.applied.keys) == Set(keys))
            #expect(ledger.appliedTwice.isEmpty)
        }
        for server in [a, b] {
            await server.stop()
            if let report = server.sanitizerLogs.report() { Issue.record("\(report)") }
        }
    }

    @Test("a server killed mid-request: 409 while its claim is fresh, then outcome unknown, never run again; an operator resolves it")
    func killedMidRequest() async throws {
        let scope = "test-kill-\(UUID().uuidString.lowercased())"
        // Claims go stale after a minute (the default): the test ages the
        // claim in the database instead of waiting for that.
        let doomed = try await ServeProcess(try await Self.serverArguments(scope: scope, ["--debug-hold-writes", "60s"]))
        let survivor = try await ServeProcess(try await Self.serverArguments(scope: scope))
        let key = "killed-\(UUID().uuidString)"
        let pending = Task { try? await Self.post(doomed.baseURL, key: key, text: "mid-request") }
        // Its write is held behind the claimed key: kill its server then.
        let held = await doomed.firstLine(startingWith: "debug: a write is held")
        try #require(held != nil, "the server ended without holding the write: \(doomed.printed)")
        try await PostgresTestDatabase.withClient { client in
            let rows = try await client.query(
                "SELECT state FROM outbox_idempotency_keys WHERE scope = \(scope)", logger: PostgresTestDatabase.logger
            ).collect()
            #expect(try rows.map { try $0.decode(String.self) } == ["in-progress"], "the claim is not in the database")
        }
        #expect(await doomed.stop(signal: SIGKILL) == SIGKILL)
        _ = await pending.value

        // The survivor never runs it: 409 while the claim may still be running…
        let fresh = try await Self.post(survivor.baseURL, key: key, text: "mid-request")
        #expect(fresh.status == 409 && fresh.problem == "in-progress", "\(fresh)")
        // …then, once the claim is older than the survivor's --stale-after
        // (aged an hour here, as if the hour had passed), 503 outcome-unknown.
        try await PostgresTestDatabase.withClient { client in
            _ = try await client.query(
                "UPDATE outbox_idempotency_keys SET since = since - interval '1 hour' WHERE scope = \(scope)",
                logger: PostgresTestDatabase.logger)
        }
        let answer = try await Self.post(survivor.baseURL, key: key, text: "mid-request")
        #expect(answer.status == 503 && answer.problem == "outcome-unknown", "\(answer)")
        #expect(try await Self.post(survivor.baseURL, key: key, text: "mid-request").problem == "outcome-unknown")
        #expect(try await Self.ledger(survivor.baseURL).applied[key] == nil, "a request whose server died was run again")

        // The operator finds it and, knowing nothing was applied, releases it; the retry then runs once.
        let url = try await PostgresTestDatabase.requireURL()
        let listed = try await OutboxTool.run(["keys", "unsettled", "--postgres", url, "--postgres-scope", scope, "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let entry = try #require(listed.stdoutLines.first.flatMap(OutboxTool.jsonObject), "\(listed.stdout)")
        #expect(entry["key"] as? String == key)
        #expect(entry["reason"] as? String == "claim-abandoned")
        let resolved = try await OutboxTool.run(["keys", "resolve", key, "--not-applied", "--postgres", url, "--postgres-scope", scope])
        #expect(resolved.status == 0, "\(resolved.stderr)")
        let rerun = try await Self.post(survivor.baseURL, key: key, text: "mid-request")
        #expect(rerun.status == 201 && !rerun.replayed, "\(rerun)")
        #expect(try await Self.ledger(survivor.baseURL).applied[key] == 1)
        await survivor.stop()
        if let report = survivor.sanitizerLogs.report() { Issue.record("\(report)") }
    }
}

/// `outbox demo --servers N --postgres`: a day of writes, under faults,
/// delivered round-robin to server processes on one database.
@Suite(
    "outbox demo --servers --postgres", .serialized, .timeLimit(.minutes(5)),
    .needsPostgres)
struct PostgresDemoTests {
    @Test("three server processes, faults on, the app killed mid-drain: every write applied exactly once across them")
    func demoAcrossServers() async throws {
        let run = try await OutboxTool.run([
            "demo", "--count", "40", "--servers", "3", "--postgres", try await PostgresTestDatabase.requireURL(), "--json",
        ])
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let report = try #require(run.stdoutLines.last.flatMap(OutboxTool.jsonObject), "\(run.stdout)")
        #expect((report["appliedTwice"] as? [String])?.isEmpty == true)
        #expect((report["lost"] as? [String])?.isEmpty == true)
        #expect((report["violations"] as? [String])?.isEmpty == true, "\(report["violations"] ?? "")")
        #expect(report["appliedExactlyOnce"] as? Int == report["expectedDeliveries"] as? Int)
        #expect(run.stderrLines.contains { $0.contains("3 reference server process(es) on one PostgreSQL database") }, "\(run.stderr)")
    }

    @Test("--servers above 1 without --postgres is refused before anything starts")
    func serversNeedPostgres() async throws {
        let run = try await OutboxTool.run(["demo", "--servers", "2"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--servers needs --postgres"), "\(run.stderr)")
    }
}
