import Foundation
import Outbox
import OutboxHTTP
import OutboxLocking
import Testing

/// The HTTP handler against a real server on 127.0.0.1.
@Suite("HTTP handler", .serialized, .timeLimit(.minutes(5)))
struct HTTPOutboxHandlerTests {
    /// A token provider that hands out "stale" until asked to refresh.
    final class RotatingTokens: OutboxTokenProvider {
        let refreshes = Locked(0)
        func token() async throws -> String? { refreshes.withLock { $0 == 0 ? "stale" : "fresh" } }
        func refreshedToken() async throws -> String? {
            refreshes.withLock { $0 += 1 }
            return "fresh"
        }
    }

    static func delivery(endpoint: String = "/things", payload: String = #"{"n":1}"#, attempt: Int = 1) -> OutboxDelivery {
        let entry = OutboxEntry(
            id: OutboxEntry.ID(), idempotencyKey: UUID().uuidString, type: "thing", method: "POST", endpoint: endpoint,
            payload: Array(payload.utf8), headers: ["Content-Type": "application/json"], partition: "u", scope: nil,
            dependencies: [], priority: 0, sequence: 1, coalescingKey: nil, status: .inFlight, attempts: attempt,
            maxAttempts: 10, nextAttemptAt: Date(), lastFailure: nil, createdAt: Date(), syncedAt: nil,
            serverID: nil, storedBytes: 0)
        return OutboxDelivery(entry: entry, endpoint: endpoint, payload: Array(payload.utf8), attempt: attempt)
    }

    @Test("2xx delivers: method, base URL + endpoint, body, stored headers, Idempotency-Key and auth are sent; the JSON id comes back")
    func success() async throws {
        let server = try await LoopbackServer { _, _ in .init(status: 201, body: #"{"id": 4711, "ok": true}"#) }
        defer { server.stop() }
        let handler = HTTPOutboxHandler(baseURL: server.baseURL, tokenProvider: StaticTokenProvider("t0k3n"))
        let delivery = Self.delivery(endpoint: "/albums/7/photos?x=1")
        let outcome = try await handler.deliver(delivery)
        #expect(outcome == .delivered(serverID: "4711"))
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.path == "/api/albums/7/photos?x=1")
        #expect(request.body == #"{"n":1}"#)
        #expect(request.headers["idempotency-key"] == delivery.idempotencyKey)
        #expect(request.headers["authorization"] == "Bearer t0k3n")
        #expect(request.headers["content-type"] == "application/json")
    }

    @Test("401 refreshes the token and resends once, with the same key; a second 401 is transient")
    func unauthorizedRefreshes() async throws {
        let server = try await LoopbackServer { request, _ in
            request.headers["authorization"] == "Bearer fresh" ? .init(status: 200, body: #"{"id":"a"}"#) : .init(status: 401)
        }
        defer { server.stop() }
        let tokens = RotatingTokens()
        let handler = HTTPOutboxHandler(baseURL: server.baseURL, tokenProvider: tokens)
        let delivery = Self.delivery()
        #expect(try await handler.deliver(delivery) == .delivered(serverID: "a"))
        #expect(tokens.refreshes.withLock { $0 } == 1)
        #expect(server.requests.map { $0.headers["idempotency-key"] } == [delivery.idempotencyKey, delivery.idempotencyKey])

        let refused = try await LoopbackServer { _, _ in .init(status: 401) }
        defer { refused.stop() }
        let stubborn = HTTPOutboxHandler(baseURL: refused.baseURL, tokenProvider: RotatingTokens())
        guard case .transient(_, let status, _) = try await stubborn.deliver(Self.delivery()) else {
            Issue.record("a repeated 401 must be transient")
            return
        }
        #expect(status == 401)
        #expect(refused.requests.count == 2)
    }

    @Test("408, 425, 429 and 5xx are transient, honouring Retry-After in seconds or as a date", arguments: [408, 425, 429, 500, 502, 503, 504])
    func transientStatuses(status: Int) async throws {
        let later = Date().addingTimeInterval(90)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let retryAfter = status == 503 ? formatter.string(from: later) : "7"
        let server = try await LoopbackServer { _, _ in .init(status: status, headers: ["Retry-After": retryAfter]) }
        defer { server.stop() }
        let sent = Date()
        let outcome = try await HTTPOutboxHandler(baseURL: server.baseURL).deliver(Self.delivery())
        let answered = Date()
        guard case .transient(_, let reported, let wait) = outcome else {
            Issue.record("HTTP \(status) must be transient, got \(outcome)")
            return
        }
        #expect(reported == status)
        let seconds = Double(try #require(wait).components.seconds)
        if status == 503 {
            // The date, whole seconds, minus the moment the answer was read:
            // somewhere between sending and receiving, however long that took.
            let date = formatter.date(from: retryAfter)!
            #expect(seconds <= date.timeIntervalSince(sent).rounded(.up))
            #expect(seconds >= date.timeIntervalSince(answered).rounded(.down))
        } else {
            #expect(seconds == 7)
        }
    }

    @Test("409 is a conflict; other 4xx are permanent, with the status and a bounded slice of the body")
    func clientErrors() async throws {
        let longBody = String(repeating: "field 'title' is required. ", count: 100)
        let server = try await LoopbackServer { request, _ in
            request.path.hasSuffix("/conflict") ? .init(status: 409, body: "version 3 exists") : .init(status: 422, body: longBody)
        }
        defer { server.stop() }
        let handler = HTTPOutboxHandler(baseURL: server.baseURL)
        guard case .conflict(let conflictReason, 409) = try await handler.deliver(Self.delivery(endpoint: "/conflict")) else {
            Issue.record("409 must be a conflict")
            return
        }
        #expect(conflictReason.contains("version 3 exists"))
        guard case .permanent(let reason, 422) = try await handler.deliver(Self.delivery()) else {
            Issue.record("422 must be permanent")
            return
        }
        #expect(reason.hasPrefix("HTTP 422: field 'title' is required."))
        #expect(reason.utf8.count < 600)
    }

    @Test("a 409 with Retry-After (the key's first request still running) is in progress, not a conflict")
    func inProgress() async throws {
        let server = try await LoopbackServer { _, _ in
            .init(status: 409, headers: ["Retry-After": "2"], body: #"{"title":"a request with this key is in progress"}"#)
        }
        defer { server.stop() }
        let handler = HTTPOutboxHandler(baseURL: server.baseURL)
        guard case .inProgress(let reason, let retryAfter) = try await handler.deliver(Self.delivery()) else {
            Issue.record("an in-progress 409 must be in progress")
            return
        }
        #expect(reason.contains("in progress"))
        #expect(retryAfter == .seconds(2))
    }

    @Test("a timeout and a dropped connection after the request was sent are interrupted; a refused connection was not sent")
    func networkFailures() async throws {
        let slow = try await LoopbackServer { _, _ in .init(status: 200, withhold: true) }
        defer { slow.stop() }
        var configuration = HTTPOutboxHandler.Configuration(baseURL: slow.baseURL)
        // Long enough for the request to reach the server on a loaded machine:
        // the server never answers, so the wait is the timeout whatever it is.
        configuration.requestTimeout = .seconds(2)
        guard case .interrupted(let timedOut) = try await HTTPOutboxHandler(configuration: configuration).deliver(Self.delivery())
        else {
            Issue.record("a timeout after the request was sent must be interrupted")
            return
        }
        #expect(timedOut.contains("timed out"))
        #expect(slow.requests.count == 1)  // it reached the server; the answer did not come back in time

        let dropping = try DroppingServer()
        defer { dropping.stop() }
        let dropped = try await HTTPOutboxHandler(baseURL: URL(string: "http://127.0.0.1:\(dropping.port)")!).deliver(Self.delivery())
        guard case .interrupted = dropped else {
            Issue.record("a connection dropped after the request was sent must be interrupted, got \(dropped)")
            return
        }

        let closedPort = try DroppingServer()
        let port = closedPort.port
        closedPort.stop()
        let refused = try await HTTPOutboxHandler(baseURL: URL(string: "http://127.0.0.1:\(port)")!).deliver(Self.delivery())
        guard case .notSent(let reason) = refused else {
            Issue.record("a refused connection must be not sent, got \(refused)")
            return
        }
        #expect(reason.contains("cannot connect"))
    }

    @Test("through the dispatcher: a 503 then 201 sends the same Idempotency-Key twice and records the server id")
    func dispatcherRoundTrip() async throws {
        let server = try await LoopbackServer { _, earlier in
            earlier == 0 ? .init(status: 503, headers: ["Retry-After": "0"]) : .init(status: 201, body: #"{"id":"srv-9"}"#)
        }
        defer { server.stop() }
        let store = InMemoryOutboxStore(partition: "u")
        let id = try await store.enqueue(
            OutboxEnqueueRequest(type: "thing", method: "POST", endpoint: "/things", payload: Array(#"{"a":1}"#.utf8))
        ).id
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        configuration.retryAfterFloor = .zero  // let Retry-After: 0 mean "now", for this test only
        let dispatcher = OutboxDispatcher(
            store: store, handlers: ["thing": HTTPOutboxHandler(baseURL: server.baseURL)], configuration: configuration)
        let report = await dispatcher.flush()
        #expect(report.waitingToRetry == 1)
        #expect(report.delivered == 1)  // Retry-After: 0 made it due again within the same flush
        #expect(try await store.completion(of: id)?.serverID == "srv-9")
        let keys = server.requests.compactMap { $0.headers["idempotency-key"] }
        #expect(keys.count == 2 && Set(keys).count == 1)
    }

    @Test("through the dispatcher: a 401 refreshes the token and resends within the same attempt")
    func refreshCostsNoAttempt() async throws {
        let server = try await LoopbackServer { request, _ in
            request.headers["authorization"] == "Bearer fresh" ? .init(status: 201, body: #"{"id":"s1"}"#) : .init(status: 401)
        }
        defer { server.stop() }
        let store = InMemoryOutboxStore(partition: "u")
        let id = try await store.enqueue(
            OutboxEnqueueRequest(type: "thing", method: "POST", endpoint: "/things", payload: Array("{}".utf8))
        ).id
        let tokens = RotatingTokens()
        let dispatcher = OutboxDispatcher(
            store: store, handlers: ["thing": HTTPOutboxHandler(baseURL: server.baseURL, tokenProvider: tokens)])
        let events = EventRecorder(dispatcher.events())
        let report = await dispatcher.flush()
        #expect(report.delivered == 1)
        #expect(report.waitingToRetry == 0)
        #expect(tokens.refreshes.withLock { $0 } == 1)
        #expect(server.requests.count == 2)
        #expect(try await store.completion(of: id)?.serverID == "s1")
        await dispatcher.stop()
        // One attempt: one `sending` event, numbered 1.
        #expect(await events.sendingAttempts(of: id) == [1])
    }
}

/// Collects `sending` events until the stream ends.
final class EventRecorder: Sendable {
    private let task: Task<[OutboxEvent], Never>

    init(_ stream: AsyncStream<OutboxEvent>) {
        task = Task { await stream.reduce(into: []) { $0.append($1) } }
    }

    func sendingAttempts(of id: OutboxEntry.ID) async -> [Int] {
        await task.value.compactMap { if case .sending(id, let attempt) = $0 { attempt } else { nil } }
    }
}
