import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

/// Idle, slow and oversized clients against the reference server, over real
/// sockets. Every wait is for an event (the server closing, an answer), with
/// a bound far past the limit under test.
@Suite("Connection hygiene", .serialized, .timeLimit(.minutes(5)))
struct ConnectionHygieneTests {
    func start(_ change: (inout ConnectionLimits) -> Void) async throws -> ReferenceServer {
        var limits = ConnectionLimits()
        change(&limits)
        return try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore(), connections: limits)
    }

    static let message = #"{"conversation":"c","text":"hi"}"#

    func post(_ server: ReferenceServer, key: String) async throws -> HTTPReply {
        try await HTTPReply.send("POST", server.baseURL.appendingPathComponent("messages"), key: key, body: Self.message)
    }

    @Test("a flood of idle connections is closed at the idle timeout; the server keeps answering")
    func idleFlood() async throws {
        let server = try await start { $0.idleTimeout = .seconds(1) }
        var connections: [RawConnection] = []
        for _ in 0..<40 { connections.append(try await RawConnection.connect(port: server.port)) }
        for connection in connections {
            #expect(await connection.next(within: 15_000) == .closed, "an idle connection was never closed")
            connection.close()
        }
        #expect(try await post(server, key: "after-idle").status == 201)
        await server.stop()
    }

    @Test("a client trickling its request head is closed at the head deadline, however often it sends")
    func slowloris() async throws {
        let server = try await start {
            $0.idleTimeout = .seconds(60)
            $0.requestHeadTimeout = .seconds(1)
        }
        let connection = try await RawConnection.connect(port: server.port)
        #expect(await connection.send("POST /messages HTTP/1.1\r\nHost: localhost\r\n"))
        // One more header byte every 200 ms of silence: at that pace the 100
        // bytes would take 20 s, far past the 1 s deadline and short of the
        // 60 s idle timeout, so only the deadline can close it.
        var trickled = 0
        var closed = false
        while trickled < 100 {
            switch await connection.next(within: 200) {
            case .closed: closed = true
            case .data: break
            case .quiet: break
            }
            if closed { break }
            _ = await connection.send("X")
            trickled += 1
        }
        #expect(closed, "the slow head was never cut off")
        #expect(trickled < 100)
        connection.close()
        #expect(try await post(server, key: "after-slowloris").status == 201)
        await server.stop()
    }

    @Test("a keep-alive connection between requests is not held to the head deadline, only to the idle timeout")
    func keepAliveUnaffected() async throws {
        let server = try await start {
            $0.idleTimeout = .seconds(60)
            $0.requestHeadTimeout = .seconds(1)
        }
        let connection = try await RawConnection.connect(port: server.port)
        let request = "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: ka-1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(Self.message.utf8.count)\r\n\r\n\(Self.message)"
        #expect(await connection.send(request))
        guard case .data(let answer) = await connection.next(within: 10_000) else {
            Issue.record("no answer")
            return
        }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 201"))
        // Quiet for longer than the head deadline: still open.
        #expect(await connection.next(within: 2_000) == .quiet)
        connection.close()
        await server.stop()
    }

    @Test("a body sent steadily above the minimum rate is read in full, though it takes longer than the body timeout")
    func steadyUploadNotCut() async throws {
        // Real time: the body deadline is the server's own timer. 512 bytes
        // per 200 ms (2.5 KiB/s) earns four seconds per part against the
        // 128 B/s minimum — a margin that holds on a loaded machine, and the
        // first part goes with the head, so no gap precedes it — so only a
        // deadline that ignored the rate (the 4 KiB body takes at least
        // 1.4 s against the 1 s body timeout) could cut it.
        let server = try await start {
            $0.requestBodyTimeout = .seconds(1)
            $0.minimumBodyRate = 128
        }
        let prefix = #"{"conversation":"c","text":""#
        let body = Array((prefix + String(repeating: "x", count: 4096 - prefix.utf8.count - 2) + #""}"#).utf8)
        let connection = try await RawConnection.connect(port: server.port)
        let head = "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: steady-1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        #expect(await connection.send(Array(head.utf8) + body[0..<512]))
        var cut = false
        for start in stride(from: 512, to: body.count, by: 512) where !cut {
            let event = await connection.next(within: 200)
            let sent = await connection.send(Array(body[start..<start + 512]))
            cut = event != .quiet || !sent
        }
        #expect(!cut, "the server answered or closed before the body was in")
        if case .data(let answer) = await connection.next(within: 10_000) {
            #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 201"))
        } else {
            Issue.record("no answer to the steady upload")
        }
        connection.close()
        await server.stop()
    }

    @Test("a body announced too large is refused with 413 and the connection closed, without reading the upload")
    func tooLargeClosesConnection() async throws {
        let server = try await start { _ in }
        let connection = try await RawConnection.connect(port: server.port)
        #expect(await connection.send(
            "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: big-1\r\nContent-Length: 100000000\r\n\r\n"))
        #expect(await connection.send(Array(repeating: UInt8(ascii: "x"), count: 64 << 10)))
        let (bytes, closed) = await connection.readUntilClosed()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 413"), "\(text)")
        #expect(text.lowercased().contains("connection: close"))
        #expect(text.contains(IdempotencyProblem.bodyTooLarge.type))
        #expect(closed, "the server went on reading the upload")
        connection.close()
        await server.stop()
    }

    @Test("a chunked body past the limit is refused with 413 and the connection closed")
    func chunkedTooLarge() async throws {
        let server = try await start { _ in }
        let connection = try await RawConnection.connect(port: server.port)
        #expect(await connection.send("POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: big-2\r\nTransfer-Encoding: chunked\r\n\r\n"))
        let chunk = "10000\r\n" + String(repeating: "y", count: 0x10000) + "\r\n"
        var sent = 0
        while sent < 20, await connection.send(chunk) { sent += 1 }
        let (bytes, closed) = await connection.readUntilClosed()
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 413"))
        #expect(closed)
        connection.close()
        await server.stop()
    }

    @Test("a malformed chunked body is 400 with a problem type, not 413, and the connection is closed")
    func malformedBody() async throws {
        let server = try await start { _ in }
        let connection = try await RawConnection.connect(port: server.port)
        #expect(await connection.send(
            "POST /messages HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: bad-1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"))
        let (bytes, closed) = await connection.readUntilClosed()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400"), "\(text)")
        #expect(text.contains(IdempotencyProblem.malformedBody.type), "\(text)")
        #expect(closed)
        #expect(server.ledger.messages == 0)
        connection.close()
        await server.stop()
    }
}
