import Foundation
import Outbox
import OutboxHTTP
import OutboxLocking
import Testing

/// Every attempt of an entry puts the same bytes on the wire, whatever the
/// connection did to the attempt before: captured at a raw loopback socket
/// (``RawSocketServer``), not through the project's own server code.
@Suite("Wire faults", .serialized, .timeLimit(.minutes(5)))
struct WireFaultTests {
    /// A dispatcher over an in-memory store, sending through the default
    /// transport with short timeouts, on the real clock (the faults are
    /// real sockets); tests wait on `drain(until:)`, which returns once the
    /// queue is empty.
    static func dispatcher(_ server: RawSocketServer, store: InMemoryOutboxStore) -> OutboxDispatcher {
        var http = HTTPOutboxHandler.Configuration(baseURL: server.baseURL, tokenProvider: StaticTokenProvider("t0k3n"))
        // Short, for the half-open and slow-header cases; a loaded machine
        // may time out an answered attempt too (one more identical resend).
        http.requestTimeout = .milliseconds(500)
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        configuration.deliveryTimeout = .seconds(5)
        configuration.backoff = OutboxBackoff(base: .milliseconds(10), cap: .milliseconds(20))
        configuration.interruptedBackoff = OutboxBackoff(base: .milliseconds(10), cap: .milliseconds(20))
        configuration.retryAfterFloor = .zero
        return OutboxDispatcher(store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: configuration)
    }

    static func enqueue(_ store: InMemoryOutboxStore, _ name: String) async throws -> OutboxEntry {
        let body = #"{"message":"hello from \#(name)","n":42}"#
        let result = try await store.enqueue(
            OutboxEnqueueRequest(
                type: "message", method: "POST", endpoint: "/messages/\(name)", payload: Array(body.utf8),
                headers: ["Content-Type": "application/json", "X-Client": "wire-test", "Accept": "application/json"]))
        guard case .enqueued(let entry) = result else { throw CancellationError() }
        return entry
    }

    static let faults: [RawSocketServer.Behaviour] = [
        .closeBeforeResponse, .closeMidResponse, .reset, .halfOpen, .slowHeaders, .refuseBeforeBody,
    ]

    @Test("the resend after a fault is byte-identical to the first attempt, and the entry is delivered once", arguments: faults)
    func resendIsIdentical(fault: RawSocketServer.Behaviour) async throws {
        let server = try RawSocketServer { _, earlier in
            earlier == 0 ? fault : .answer(status: 201, body: #"{"id":"srv-1"}"#)
        }
        defer { server.stop() }
        let store = InMemoryOutboxStore(partition: "wire")
        let entry = try await Self.enqueue(store, "\(fault)")
        let dispatcher = Self.dispatcher(server, store: store)
        let report = await dispatcher.drain(until: Date().addingTimeInterval(120))
        await dispatcher.stop()

        #expect(report.delivered == 1, "\(fault): \(report)")
        #expect(try await store.completion(of: entry.id)?.serverID == "srv-1")
        let sent = server.captures.filter { $0.path == "/messages/\(fault)" }
        #expect(sent.count >= 2, "\(fault): \(sent.count) requests")
        let first = try #require(sent.first)
        #expect(first.body == entry.payload, "the body went out whole")
        #expect(first.head.contains("Idempotency-Key: \(entry.idempotencyKey)"))
        #expect(first.head.lowercased().contains("content-length: \(entry.payload.count)"))
        for resend in sent.dropFirst() {
            #expect(resend.raw == first.raw, "\(fault): attempt differs:\n\(String(decoding: resend.raw, as: UTF8.self))\nvs\n\(String(decoding: first.raw, as: UTF8.self))")
            #expect(resend.connection != first.connection, "a resend goes on a new connection")
        }
        // What the connection did decides how the attempt counts.
        switch fault {
        case .refuseBeforeBody:
            #expect(report.waitingToRetry == 1)  // the server answered 503: a real, counted failure
        default:
            #expect(report.interrupted >= 1, "\(fault): sent whole, answer lost: interrupted, \(report)")
            #expect(report.waitingToRetry == 0)
        }
    }

    @Test("a keep-alive connection the server closed while idle: the next entry's requests are identical and it is delivered")
    func idleConnectionClosedByServer() async throws {
        let server = try RawSocketServer { capture, earlier in
            capture.path == "/messages/first" ? .answerThenCloseIdle : .answer(status: 201, body: #"{"id":"srv-2"}"#)
        }
        defer { server.stop() }
        let store = InMemoryOutboxStore(partition: "wire")
        _ = try await Self.enqueue(store, "first")
        let dispatcher = Self.dispatcher(server, store: store)
        await dispatcher.drain(until: Date().addingTimeInterval(120))
        // The first connection is closed by the server while idle in the pool.
        #expect(server.closeIdleConnections() == 1)
        let second = try await Self.enqueue(store, "second")
        let report = await dispatcher.drain(until: Date().addingTimeInterval(120))
        await dispatcher.stop()
        #expect(report.delivered == 1)
        #expect(try await store.completion(of: second.id)?.serverID == "srv-2")
        let sent = server.captures.filter { $0.path == "/messages/second" }
        #expect(!sent.isEmpty)
        #expect(Set(sent.map(\.raw)).count == 1, "every request of the entry carries the same bytes")
        #expect(sent.allSatisfy { $0.body == second.payload })
    }

    @Test("headers go out in one order whatever the dictionary's, so a resend after a restart is the same bytes")
    func headerOrderIsStable() throws {
        let handler = HTTPOutboxHandler(baseURL: URL(string: "http://127.0.0.1:1/api")!)
        var headers: [String: String] = [:]
        for index in 0..<20 { headers["X-Header-\(index)"] = "\(index)" }
        headers["content-type"] = "application/json"
        let delivery = HTTPOutboxHandlerTests.delivery()
        var a = delivery
        a.entry.headers = headers
        var b = delivery
        b.entry.headers = Dictionary(uniqueKeysWithValues: headers.reversed().map { ($0.key, $0.value) })
        let names = try handler.request(for: a, token: "t").headers.map(\.name)
        #expect(names == (try handler.request(for: b, token: "t").headers.map(\.name)))
        #expect(names.last == "Authorization")
        #expect(names.dropLast().last == "Idempotency-Key")
    }
}
