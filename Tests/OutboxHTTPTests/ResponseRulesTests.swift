import Foundation
import Outbox
import OutboxHTTP
import OutboxLocking
import Testing

/// How the HTTP handler reads what a server says about a write: redirects,
/// "already processed", and outages. Each answer misread would resend,
/// misdirect or give up on a write the server may already have applied.
@Suite("Response rules", .serialized, .timeLimit(.minutes(5)))  // a hang guard: the outage test makes ~300 refused connections
struct ResponseRulesTests {
    @Test("a redirect is never followed for a write: 301, 302, 307 and 308 are permanent, name the Location, and nothing reaches it", arguments: [301, 302, 307, 308])
    func redirectsAreNotFollowed(status: Int) async throws {
        let elsewhere = try await LoopbackServer { _, _ in .init(status: 200, body: #"{"id":"from-elsewhere"}"#) }
        defer { elsewhere.stop() }
        let location = "http://127.0.0.1:\(elsewhere.port)/api/moved"
        let server = try await LoopbackServer { _, _ in .init(status: status, headers: ["Location": location]) }
        defer { server.stop() }
        let handler = HTTPOutboxHandler(baseURL: server.baseURL, tokenProvider: StaticTokenProvider("secret-token"))
        let outcome = try await handler.deliver(HTTPOutboxHandlerTests.delivery())
        guard case .permanent(let reason, let reported) = outcome else {
            Issue.record("HTTP \(status) must be permanent, got \(outcome)")
            return
        }
        #expect(reported == status)
        #expect(reason.contains(location))
        #expect(server.requests.count == 1)
        #expect(elsewhere.requests.isEmpty, "the redirect was followed (with the credentials)")
    }

    @Test("303 See Other after a write counts as delivered, with the server id from its body; it is not followed")
    func seeOtherDelivers() async throws {
        let elsewhere = try await LoopbackServer { _, _ in .init(status: 200, body: #"{"id":"wrong"}"#) }
        defer { elsewhere.stop() }
        let server = try await LoopbackServer { _, _ in
            .init(status: 303, headers: ["Location": "http://127.0.0.1:\(elsewhere.port)/api/things/7"], body: #"{"id":"7"}"#)
        }
        defer { server.stop() }
        let outcome = try await HTTPOutboxHandler(baseURL: server.baseURL).deliver(HTTPOutboxHandlerTests.delivery())
        #expect(outcome == .delivered(serverID: "7"))
        #expect(elsewhere.requests.isEmpty)
    }

    @Test("an endpoint that would leave the configured host is never sent")
    func foreignEndpointIsRefused() async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201) }
        defer { server.stop() }
        let handler = HTTPOutboxHandler(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, tokenProvider: StaticTokenProvider("t"))
        let outcome = try await handler.deliver(HTTPOutboxHandlerTests.delivery(endpoint: "@evil.example/steal"))
        guard case .permanent(let reason, nil) = outcome else {
            Issue.record("must be permanent, got \(outcome)")
            return
        }
        #expect(reason.contains("not on"))
        #expect(server.requests.isEmpty)
    }

    @Test("410 and 422 'key reused' after a lost answer mean already processed: the entry waits in conflict, its dependents are not quarantined")
    func alreadyProcessedDoesNotCascade() async throws {
        let server = try await LoopbackServer { request, earlier in
            switch (request.path, earlier) {
            case ("/api/gone", 0), ("/api/reused", 0): .init(status: 503)  // the first answer is lost
            case ("/api/gone", _):
                .init(status: 410, headers: ["Content-Type": "application/problem+json"],
                      body: #"{"type":"https://example.com/problems/response-not-stored","title":"Response not stored"}"#)
            case ("/api/reused", _):
                .init(status: 422, headers: ["Content-Type": "application/problem+json"],
                      body: #"{"type":"https://example.com/idempotency","title":"Idempotency-Key is already used"}"#)
            default: .init(status: 201, body: #"{"id":"c"}"#)
            }
        }
        defer { server.stop() }
        var independent = OutboxStoreConfiguration()
        independent.unscopedDelivery = .concurrent  // both parents answered in the same flush
        let store = InMemoryOutboxStore(partition: "u", configuration: independent)
        var ids: [OutboxEntry.ID] = []
        var children: [OutboxEntry.ID] = []
        for path in ["/gone", "/reused"] {
            let parent = try await store.enqueue(OutboxEnqueueRequest(type: "t", method: "POST", endpoint: path, payload: Array("{}".utf8))).id
            ids.append(parent)
            children.append(try await store.enqueue(OutboxEnqueueRequest(
                type: "t", method: "POST", endpoint: "/children", payload: Array("{}".utf8), dependencies: [parent])).id)
        }
        let clock = ManualOutboxClock()
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 5
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [:], fallback: HTTPOutboxHandler(baseURL: server.baseURL), configuration: configuration, clock: clock)
        await dispatcher.flush()
        clock.advance(by: .seconds(2))
        let report = await dispatcher.flush()
        #expect(report.conflicts == 2)
        #expect(report.quarantined == 0)
        for id in ids {
            let entry = try #require(try await store.entry(id))
            #expect(entry.status == .conflict)
            #expect(entry.lastFailure?.cause == .alreadyProcessed, "\(entry.lastFailure.map(String.init(describing:)) ?? "")")
        }
        for child in children { #expect(try await store.entry(child)?.status == .pending) }
    }

    @Test("a 422 that is not about the key (validation) stays permanent")
    func validation422IsPermanent() async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 422, body: #"{"error":"title is required"}"#) }
        defer { server.stop() }
        guard case .permanent(_, 422) = try await HTTPOutboxHandler(baseURL: server.baseURL).deliver(HTTPOutboxHandlerTests.delivery()) else {
            Issue.record("a validation 422 must be permanent")
            return
        }
    }

    @Test("an outage never kills a write: 24 hours of connection refused (injected clock), then the server comes up and every write is delivered")
    func outageDoesNotKillWrites() async throws {
        // A port with nothing behind it: every connection is refused.
        let placeholder = try RawSocketServer { _, _ in .closeBeforeResponse }
        let port = placeholder.port
        placeholder.stop()
        var independent = OutboxStoreConfiguration()
        independent.unscopedDelivery = .concurrent  // every write meets the outage (in order, only the first would)
        let store = InMemoryOutboxStore(partition: "u", configuration: independent)
        var ids: [OutboxEntry.ID] = []
        for index in 0..<3 {
            ids.append(try await store.enqueue(OutboxEnqueueRequest(
                type: "t", method: "POST", endpoint: "/writes/\(index)", payload: Array(#"{"n":\#(index)}"#.utf8))).id)
        }
        let clock = ManualOutboxClock()
        var configuration = OutboxDispatcherConfiguration()  // the defaults: 10 attempts, 7 days, backoff 1 s … 5 min
        configuration.randomSeed = 9
        let handler = HTTPOutboxHandler(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let dispatcher = OutboxDispatcher(store: store, handlers: [:], fallback: handler, configuration: configuration, clock: clock)
        let end = clock.now().addingTimeInterval(24 * 3600)
        var notSent = 0
        // Each move of the clock fires the dispatcher's retry timer, whose
        // drain runs in the background: a flush follows every move, so that
        // drain is joined (or finds nothing due) before the entries are read.
        // Moving the clock last, past the day, left the timer's drain sending
        // while they were read (one entry found in flight).
        while true {
            notSent += await dispatcher.flush().notSent
            guard let next = try await store.nextDueDate(), next < end else { break }
            clock.set(to: next)
        }
        #expect(notSent > 100, "\(notSent) refused attempts in 24 h")
        for id in ids {
            let entry = try #require(try await store.entry(id))
            #expect(entry.status == .waitingToRetry)
            #expect(entry.attempts == 0)
            #expect(entry.lastFailure?.cause == .notSent)
            #expect(entry.lastFailure?.message?.contains("cannot connect") == true)
            // Capped backoff: never more than 5 minutes away.
            #expect(entry.nextAttemptAt <= clock.now().addingTimeInterval(300))
        }

        // The server comes up on that port.
        let server = try RawSocketServer(port: port) { _, _ in .answer(status: 201, body: #"{"id":"up"}"#) }
        defer { server.stop() }
        clock.advance(by: .seconds(300))
        await dispatcher.flush()
        // A loaded machine may fail a first connection to the new server
        // too; whatever fails now is retried like everything else. What was
        // delivered is read from the store, not from the flushes' reports:
        // a drain the retry timer started and finished before a flush began
        // is in no flush's report.
        for _ in 0..<5 where try await store.summary().total > 0 {
            guard let next = try await store.nextDueDate() else { break }
            clock.set(to: next)
            await dispatcher.flush()
        }
        let left = try await store.entries(matching: .all).map { "\($0.status): \($0.lastFailure.map(String.init(describing:)) ?? "")" }
        #expect(try await store.summary().total == 0, "left: \(left)")
        for id in ids { #expect(try await store.completion(of: id)?.serverID == "up") }
        await dispatcher.stop()
    }
}
