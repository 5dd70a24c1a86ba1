import Foundation
import Outbox
import OutboxHTTP
import Testing

/// The HTTP handler's options for servers that are not the IETF draft — the key in another header or in the JSON body, and an
/// app's own reading of statuses — against a real server on 127.0.0.1.
@Suite("HTTP handler options", .serialized, .timeLimit(.minutes(5)))
struct HandlerOptionsTests {
    static func delivery(
        key: String = UUID().uuidString, payload: String = #"{"n":1}"#, headers: [String: String] = [:], attempt: Int = 1
    ) -> OutboxDelivery {
        let entry = OutboxEntry(
            id: OutboxEntry.ID(), idempotencyKey: key, type: "thing", method: "POST", endpoint: "/things",
            payload: Array(payload.utf8), headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a },
            partition: "u", scope: nil, dependencies: [], priority: 0, sequence: 1, coalescingKey: nil, status: .inFlight,
            attempts: attempt, maxAttempts: 10, nextAttemptAt: Date(), lastFailure: nil, createdAt: Date(),
            syncedAt: nil, serverID: nil, storedBytes: 0)
        return OutboxDelivery(entry: entry, endpoint: "/things", payload: Array(payload.utf8), attempt: attempt)
    }

    static func handler(_ server: LoopbackServer, _ change: (inout HTTPOutboxHandler.Configuration) -> Void) -> HTTPOutboxHandler {
        var configuration = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
        change(&configuration)
        return HTTPOutboxHandler(configuration: configuration)
    }

    static func jsonObject(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("the key goes in the configured header, on every attempt; a stored header of that name is never sent in its place")
    func keyInAnotherHeader() async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201, body: #"{"id":"s1"}"#) }
        defer { server.stop() }
        let handler = Self.handler(server) { $0.idempotencyKeyPlacement = .header("X-Request-Id") }
        let delivery = Self.delivery(headers: ["x-request-id": "forged", "X-Trace": "t"])
        #expect(try await handler.deliver(delivery) == .delivered(serverID: "s1"))
        #expect(try await handler.deliver(Self.delivery(key: delivery.idempotencyKey, attempt: 2)) == .delivered(serverID: "s1"))
        #expect(server.requests.map { $0.headers["x-request-id"] } == [delivery.idempotencyKey, delivery.idempotencyKey])
        #expect(server.requests.allSatisfy { $0.headers["idempotency-key"] == nil })
        #expect(server.requests.first?.headers["x-trace"] == "t")
        #expect(server.requests.first?.body == #"{"n":1}"#)
    }

    @Test("a header name that cannot carry the key sends nothing and is not sent (retried, never quarantined)",
          arguments: ["", "Bad Header", "Authorization", "content-length", "Key\r\nX-Evil: 1"])
    func unusableHeaderName(name: String) async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201) }
        defer { server.stop() }
        let handler = Self.handler(server) { $0.idempotencyKeyPlacement = .header(name) }
        guard case .notSent(let reason) = try await handler.deliver(Self.delivery()) else {
            Issue.record("an unusable key header must be not sent")
            return
        }
        #expect(reason.contains("idempotency key"))
        #expect(server.requests.isEmpty)
    }

    @Test("the key as a JSON member: inserted first, the app's bytes otherwise as they were, the same bytes on a resend")
    func keyInTheBody() async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201, body: #"{"id":7}"#) }
        defer { server.stop() }
        let handler = Self.handler(server) { $0.idempotencyKeyPlacement = .jsonBodyMember("request_id") }
        let key = #"k"ey\with "quotes""#
        let payload = "  {\"title\": \"Beach\",\n \"n\": 1.50, \"tags\": [\"a\"]}"
        #expect(try await handler.deliver(Self.delivery(key: key, payload: payload)) == .delivered(serverID: "7"))
        #expect(try await handler.deliver(Self.delivery(key: key, payload: payload, attempt: 2)) == .delivered(serverID: "7"))
        #expect(try await handler.deliver(Self.delivery(key: "k2", payload: "{ }")) == .delivered(serverID: "7"))
        let bodies = server.requests.map(\.body)
        try #require(bodies.count == 3)
        #expect(bodies[0] == bodies[1])
        let sent = try Self.jsonObject(bodies[0])
        #expect(sent["request_id"] as? String == key)
        #expect(sent["title"] as? String == "Beach")
        #expect(bodies[0].hasSuffix(#""title": "Beach","# + "\n" + #" "n": 1.50, "tags": ["a"]}"#))
        #expect(try Self.jsonObject(bodies[2])["request_id"] as? String == "k2")
        #expect(Set(try Self.jsonObject(bodies[2]).keys) == ["request_id"])
        #expect(server.requests.allSatisfy { $0.headers["idempotency-key"] == nil })
    }

    @Test("a body that is not a JSON object, or already has the member, is permanent and never sent",
          arguments: [#"[1, 2]"#, #""text""#, "", "{\"n\":", #"{"request_id": "mine"}"#])
    func bodyThatCannotCarryTheKey(payload: String) async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201) }
        defer { server.stop() }
        let handler = Self.handler(server) { $0.idempotencyKeyPlacement = .jsonBodyMember("request_id") }
        guard case .permanent(let reason, nil) = try await handler.deliver(Self.delivery(payload: payload)) else {
            Issue.record("a body that cannot carry the key must be permanent")
            return
        }
        #expect(reason.contains("request_id"))
        #expect(server.requests.isEmpty)
    }

    @Test("an outcome rule reclassifies: 410 to a resend counts as delivered; a first attempt's 410 and other statuses keep the table")
    func outcomeRules() async throws {
        let server = try await LoopbackServer { request, _ in
            request.headers["x-status"].flatMap(Int.init).map { .init(status: $0, body: "gone") } ?? .init(status: 500)
        }
        defer { server.stop() }
        let plain = Self.handler(server) { _ in }
        let ruled = Self.handler(server) { configuration in
            configuration.outcomeRules = [
                .deliveredOnResend(status: 410),
                HTTPOutcomeRule { $0.status == 404 ? .delivered(serverID: "already-deleted") : nil },
            ]
        }
        func send(_ handler: HTTPOutboxHandler, _ status: Int, attempt: Int) async throws -> OutboxOutcome {
            try await handler.deliver(Self.delivery(headers: ["X-Status": "\(status)"], attempt: attempt))
        }
        guard case .alreadyProcessed(_, 410) = try await send(plain, 410, attempt: 2) else {
            Issue.record("without a rule, 410 to a resend is already processed")
            return
        }
        #expect(try await send(ruled, 410, attempt: 2) == .delivered(serverID: nil))
        guard case .permanent(_, 410) = try await send(ruled, 410, attempt: 1) else {
            Issue.record("a first attempt's 410 keeps the table's reading")
            return
        }
        #expect(try await send(ruled, 404, attempt: 1) == .delivered(serverID: "already-deleted"))
        guard case .transient(_, 503, _) = try await send(ruled, 503, attempt: 3) else {
            Issue.record("a status no rule reads keeps the table's reading")
            return
        }
    }

    /// A dispatcher over an in-memory store holding one `POST /things`, and its id.
    static func dispatcher(_ server: LoopbackServer, resend: ClientWinsResend?) async throws -> (OutboxDispatcher, InMemoryOutboxStore, OutboxEntry.ID) {
        let store = InMemoryOutboxStore(partition: "u")
        let id = try await store.enqueue(
            OutboxEnqueueRequest(type: "thing", method: "POST", endpoint: "/things", payload: Array(#"{"a":1}"#.utf8))
        ).id
        let handler = Self.handler(server) { configuration in
            configuration.conflictPolicy = .clientWins
            configuration.clientWinsResend = resend
        }
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        return (OutboxDispatcher(store: store, handlers: ["thing": handler], configuration: configuration), store, id)
    }

    @Test("clientWins resends after a 409: the configured method and headers, the same body, a derived key; the resend's answer delivers")
    func clientWinsResends() async throws {
        let server = try await LoopbackServer { request, _ in
            request.method == "PUT" && request.headers["if-match"] == "*"
                ? .init(status: 200, body: #"{"id":"mine"}"#) : .init(status: 409, body: "version 3 exists")
        }
        defer { server.stop() }
        let (dispatcher, store, id) = try await Self.dispatcher(server, resend: ClientWinsResend(method: "PUT", headers: ["If-Match": "*"]))
        let report = await dispatcher.flush()
        await dispatcher.stop()
        #expect(report.conflicts == 1)
        #expect(report.delivered == 1)
        #expect(try await store.completion(of: id)?.serverID == "mine")
        let requests = server.requests
        try #require(requests.count == 2)
        #expect(requests.map(\.method) == ["POST", "PUT"])
        #expect(requests[0].body == requests[1].body)
        let key = try #require(requests[0].headers["idempotency-key"])
        #expect(requests[1].headers["idempotency-key"] == key + "-client-wins")
        #expect(requests[0].headers["if-match"] == nil)
    }

    @Test("clientWins with no resend configured, or a resend answered with another 409, leaves the entry in conflict")
    func clientWinsConflictStands() async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 409, body: "version 3 exists") }
        defer { server.stop() }
        for resend in [nil, ClientWinsResend(method: "PUT")] {
            let before = server.requests.count
            let (dispatcher, store, id) = try await Self.dispatcher(server, resend: resend)
            let report = await dispatcher.flush()
            await dispatcher.stop()
            #expect(report.conflicts == 1)
            #expect(report.delivered == 0)
            #expect(try await store.entry(id)?.status == .conflict)
            #expect(server.requests.count - before == (resend == nil ? 1 : 2))
        }
    }

    @Test("a request timeout longer than SwiftNIO's clock can add is as good as forever, not a trap", arguments: [Duration.seconds(Int64.max), .seconds(400 * 365 * 24 * 3600)])
    func hugeRequestTimeout(timeout: Duration) async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201, body: #"{"id":"s1"}"#) }
        defer { server.stop() }
        var configuration = AsyncHTTPClientTransport.Configuration()
        configuration.idleTimeout = timeout
        try await AsyncHTTPClientTransport.with(configuration: configuration) { transport in
            let handler = Self.handler(server) {
                $0.requestTimeout = timeout
                $0.transport = transport
            }
            let outcome = try await handler.deliver(Self.delivery())
            #expect(outcome == .delivered(serverID: "s1"))
        }
    }
}
