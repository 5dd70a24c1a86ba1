import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

/// The reference server's round trip (`outbox serve --latency`): every
/// request waits before anything handles it, without holding a thread.
@Suite("Server latency", .serialized, .timeLimit(.minutes(5)))
struct ServerLatencyTests {
    static let message = #"{"conversation":"c","text":"hi"}"#

    static func request(key: String) -> String {
        "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: \(key)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(message.utf8.count)\r\n\r\n\(message)"
    }

    @Test("requests are held for the latency before they are applied, several at once, then answered")
    func heldThenApplied() async throws {
        // Long enough that three loopback connections are made well within
        // it on a loaded machine (with 5 s, one CI run applied the first
        // request before the third connected).
        let server = try await ReferenceServer.start(
            keyStore: InMemoryIdempotencyKeyStore(), latency: ServerLatency(base: .seconds(20)))
        var connections: [RawConnection] = []
        for index in 0..<3 {
            let connection = try #require(try await RawConnection.connect(port: server.port, sending: Self.request(key: "held-\(index)")))
            connections.append(connection)
        }
        // All three are in the server, none applied: they wait out the
        // round trip side by side (the activity count is the outermost
        // middleware, the latency the next).
        await server.waitForActivity { $0.writesInFlight == 3 }
        #expect(server.ledger.applied.isEmpty, "applied before the latency passed: \(server.ledger.applied)")
        for connection in connections {
            guard case .data(let bytes) = await connection.next(within: 30_000) else {
                Issue.record("no answer after the latency")
                continue
            }
            #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 201"))
            connection.close()
        }
        #expect(server.ledger.applied.count == 3)
        await server.stop()
    }
}
