import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

/// Clients that hold a connection slot without finishing a request — silent
/// ones, slow bodies — against a server capped at two connections, over real
/// sockets: a new client must still be answered once the deadlines free a
/// slot. These are the server's own timers, so the tests configure 1 s
/// deadlines and wait on real time; every wait is for an event (an answer,
/// a close) with a bound far past the deadlines (tens of them: a full run
/// of the suite on two busy cores stretches a one-second timer many times)
/// and short of the 60 s idle timeout, the only other thing that could free
/// a slot.
@Suite("Connection slots", .serialized, .timeLimit(.minutes(5)))
struct ConnectionSlotTests {
    static let message = #"{"conversation":"c","text":"hi"}"#
    /// Clients ahead of the new one: more than SwiftNIO's accept batch (4)
    /// plus one, so the cap holds the new one back whatever the batches.
    static let ahead = 6

    func start(_ change: (inout ConnectionLimits) -> Void) async throws -> ReferenceServer {
        var limits = ConnectionLimits()
        limits.maximumConnections = 2
        limits.idleTimeout = .seconds(60)
        change(&limits)
        return try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore(), connections: limits)
    }

    /// Sends a whole request on a new connection; its answer's first bytes,
    /// or `nil` if none came within `milliseconds`.
    func answer(_ server: ReferenceServer, key: String, within milliseconds: Int32) async throws -> String? {
        let request = "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: \(key)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(Self.message.utf8.count)\r\n\r\n\(Self.message)"
        guard let connection = try await RawConnection.connect(port: server.port, sending: request) else { return nil }
        defer { connection.close() }
        guard case .data(let bytes) = await connection.next(within: milliseconds) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("connections that never send a byte are closed at the head deadline, counted from the accept")
    func silentClients() async throws {
        let server = try await start { $0.requestHeadTimeout = .seconds(1) }
        // Six ahead of the new client: SwiftNIO accepts up to 4 connections
        // per read before the cap stops it, so at most 5 of them can be
        // accepted at first, and the new client waits in the backlog.
        var silent: [RawConnection] = []
        for _ in 0..<Self.ahead { silent.append(try await RawConnection.connect(port: server.port)) }
        let reply = try await answer(server, key: "behind-silent", within: 40_000)
        #expect(reply?.hasPrefix("HTTP/1.1 201") == true, "no answer while silent clients held the slots: \(reply ?? "nothing")")
        for connection in silent {
            #expect(await connection.next(within: 15_000) == .closed, "a silent connection was never closed")
            connection.close()
        }
        await server.stop()
    }

    @Test("a body trickled slower than the body deadline allows is cut (408 or closed), freeing its slot")
    func slowBodies() async throws {
        let server = try await start {
            $0.requestHeadTimeout = .seconds(1)
            $0.requestBodyTimeout = .seconds(1)
        }
        // The slots, taken before the new client connects (the backlog is
        // accepted in order): a whole head announcing 1000 bytes, then one
        // body byte per 200 ms (5 B/s, far under the 1 KiB/s minimum rate),
        // stopping after 150 bytes (30 s) if the server never cuts it.
        var slow: [RawConnection] = []
        for index in 0..<Self.ahead {
            let connection = try await RawConnection.connect(port: server.port)
            #expect(await connection.send(
                "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: slow-body-\(index)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"))
            slow.append(connection)
        }
        let trickles = slow.map { connection in
            Task { () -> (bytes: [UInt8], closed: Bool) in
                var received: [UInt8] = []
                for _ in 0..<150 {
                    switch await connection.next(within: 200) {
                    case .closed: return (received, true)
                    case .data(let bytes): received += bytes
                    case .quiet: break
                    }
                    _ = await connection.send("x")
                }
                return (received, false)
            }
        }
        let reply = try await answer(server, key: "behind-slow-bodies", within: 40_000)
        #expect(reply?.hasPrefix("HTTP/1.1 201") == true, "no answer while slow bodies held the slots: \(reply ?? "nothing")")
        for trickle in trickles {
            let (bytes, closed) = await trickle.value
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(closed || text.hasPrefix("HTTP/1.1 408"), "a slow body was never cut: \(text)")
            #expect(text.isEmpty || text.hasPrefix("HTTP/1.1 408"), "\(text)")
        }
        for connection in slow { connection.close() }
        await server.stop()
    }
}
