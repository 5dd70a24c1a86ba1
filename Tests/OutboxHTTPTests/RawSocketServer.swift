import Foundation
import OutboxLocking

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A loopback HTTP/1.1 server written on raw sockets, for tests that must
/// see exactly what the client put on the wire and misbehave at the socket
/// level: each request's raw bytes are captured (headers and body, as
/// received), then a script says what the connection does — answer,
/// close before answering, close mid-answer, reset, never answer, stall in
/// the headers, refuse early, or answer and then close the idle connection.
/// None of the project's server code is involved.
final class RawSocketServer: Sendable {
    enum Behaviour: Sendable, Hashable {
        /// A whole response; the connection stays open for the next request.
        case answer(status: Int, body: String)
        /// Close the connection without a byte of response.
        case closeBeforeResponse
        /// Send the status line, headers and half the body, then close.
        case closeMidResponse
        /// Send a 201 whose JSON body is delimited by the connection's close
        /// (no `Content-Length`, as Django's WSGI server answers), cut in half.
        case closeMidCloseDelimitedResponse
        /// Reset the connection (RST, not FIN) without answering.
        case reset
        /// Never answer: the connection stays open until the server stops.
        case halfOpen
        /// Send the status line and one header, then nothing more.
        case slowHeaders
        /// Answer 503 with `Connection: close` as soon as the headers are in,
        /// before reading the body (what a server refusing `100-continue`
        /// does), then read the body and close.
        case refuseBeforeBody
        /// Answer 201 (no `Connection: close`), then read nothing more: the
        /// connection stays open, idle in the client's pool, until
        /// ``RawSocketServer/closeIdleConnections()`` closes it.
        case answerThenCloseIdle
        /// Read the head, never a byte of the body: the client's socket
        /// buffers fill and its body stream is held back. Reset after
        /// `resetAfter`, or held until the server stops if `nil`.
        case stallInBody(resetAfter: Duration?)
        /// Answer 413 (with `Connection: close`) as soon as the head is in,
        /// never reading the body, then hold the connection open unread (a
        /// server refusing an upload too large for it, the body still coming).
        case refuseTooLargeUnread
        /// Hold the request until `together` requests are held at once (all
        /// of them are then answered 201) or `atMost` passes (then answered
        /// alone): a server whose answers take time, that records how many
        /// requests it held at once (``RawSocketServer/mostHeldAtOnce``).
        case answerWhenHeld(together: Int, atMost: Duration)
    }

    /// One request as it arrived.
    struct Capture: Sendable, Hashable {
        var raw: [UInt8]
        var connection: Int
        /// The request line and header block as text.
        var head: String { String(decoding: raw, as: UTF8.self).components(separatedBy: "\r\n\r\n")[0] }
        var path: String { head.split(separator: " ").dropFirst().first.map(String.init) ?? "" }
        var body: [UInt8] {
            guard let range = raw.firstRange(of: Array("\r\n\r\n".utf8)) else { return [] }
            return Array(raw[range.upperBound...])
        }
    }

    let port: Int
    private let listener: Int32
    private let script: @Sendable (_ capture: Capture, _ earlierOnPath: Int) -> Behaviour
    private let gate = HoldGate()
    private let state = Locked<(captures: [Capture], held: [Int32], idle: [Int32], connections: Int, stopped: Bool)>(
        ([], [], [], 0, false))

    /// - Parameter port: 0 for any free port.
    /// - Parameter receiveBuffer: the accepted sockets' `SO_RCVBUF`, if set:
    ///   small, so that a body the server does not read fills the
    ///   connection after a few megabytes (the client's send buffer).
    init(
        port: Int = 0, receiveBuffer: Int32? = nil,
        script: @escaping @Sendable (_ capture: Capture, _ earlierOnPath: Int) -> Behaviour
    ) throws {
        self.script = script
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        if var receiveBuffer {
            // Set on the listener, before listen(2): accepted sockets inherit it.
            setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { return }
                let number = state.withLock { state -> Int in
                    state.connections += 1
                    return state.connections
                }
                Thread { self.serve(connection, number: number) }.start()
            }
        }.start()
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var captures: [Capture] { state.withLock { $0.captures } }
    /// The most requests ``Behaviour/answerWhenHeld(together:atMost:)`` held at once.
    var mostHeldAtOnce: Int { gate.mostHeld }
    /// Connections answered by ``Behaviour/answerThenCloseIdle`` and not
    /// closed yet.
    var idleConnections: Int { state.withLock { $0.idle.count } }

    /// Closes the connections ``Behaviour/answerThenCloseIdle`` answered
    /// (while they are idle in the client's pool); how many it closed.
    @discardableResult
    func closeIdleConnections() -> Int {
        let idle = state.withLock { state -> [Int32] in
            defer { state.idle = [] }
            return state.idle
        }
        for fd in idle { close(fd) }
        return idle.count
    }

    /// Stops listening and closes every connection held open.
    func stop() {
        let held = state.withLock { state -> [Int32] in
            state.stopped = true
            defer {
                state.held = []
                state.idle = []
            }
            return state.held + state.idle
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in held { close(fd) }
    }

    private func serve(_ connection: Int32, number: Int) {
        var buffer: [UInt8] = []
        while true {
            guard let headEnd = readUntilHeadEnd(connection, into: &buffer) else {
                close(connection)
                return
            }
            let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
            let length = Self.contentLength(head)
            var capture = Capture(raw: Array(buffer[..<headEnd]), connection: number)
            buffer.removeFirst(headEnd)
            let earlier = state.withLock { $0.captures.filter { $0.path == capture.path }.count }
            let behaviour = script(capture, earlier)
            if behaviour == .refuseBeforeBody {
                write(connection, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            }
            if behaviour == .refuseTooLargeUnread {
                state.withLock { $0.captures.append(capture) }
                let body = #"{"error":"payload too large"}"#
                write(connection, "HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                hold(connection)
                return
            }
            if case .stallInBody(let resetAfter) = behaviour {
                state.withLock { $0.captures.append(capture) }
                stall(connection, resetAfter: resetAfter)
                return
            }
            guard readBody(connection, length: length, into: &buffer) else {
                close(connection)
                return
            }
            capture.raw += buffer.prefix(length)
            buffer.removeFirst(length)
            state.withLock { $0.captures.append(capture) }
            switch behaviour {
            case .answer(let status, let body):
                write(connection, "HTTP/1.1 \(status) Status\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                continue
            case .answerWhenHeld(let together, let atMost):
                gate.hold(together: together, atMost: atMost)
                let body = #"{"id":"held"}"#
                write(connection, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                continue
            case .answerThenCloseIdle:
                // Kept before the answer goes out: once the client has the
                // answer, closeIdleConnections() finds the connection.
                let kept = state.withLock { state -> Bool in
                    if state.stopped { return false }
                    state.idle.append(connection)
                    return true
                }
                guard kept else {
                    close(connection)
                    return
                }
                let body = #"{"id":"idle"}"#
                write(connection, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                return
            case .closeBeforeResponse, .refuseBeforeBody:
                close(connection)
                return
            case .closeMidResponse:
                write(connection, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"id\":\"half")
                close(connection)
                return
            case .closeMidCloseDelimitedResponse:
                write(connection, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"id\":\"half")
                close(connection)
                return
            case .reset:
                reset(connection)
                return
            case .halfOpen, .slowHeaders:
                if behaviour == .slowHeaders { write(connection, "HTTP/1.1 201 Created\r\nContent-Type: appl") }
                hold(connection)
                return
            case .stallInBody, .refuseTooLargeUnread:
                return  // answered above, before the body
            }
        }
    }

    /// Keeps `connection` open, unread, until the server stops.
    private func hold(_ connection: Int32) {
        let held = state.withLock { state -> Bool in
            if state.stopped { return false }
            state.held.append(connection)
            return true
        }
        if !held { close(connection) }
    }

    private func stall(_ connection: Int32, resetAfter: Duration?) {
        guard let resetAfter else { return hold(connection) }
        // The fault's duration, on the real clock: the client's body stream
        // must be held back by full socket buffers when the reset comes,
        // and nothing the server can see says when they are full.
        Thread.sleep(forTimeInterval: Double(resetAfter.components.seconds) + Double(resetAfter.components.attoseconds) / 1e18)
        reset(connection)
    }

    private func reset(_ connection: Int32) {
        var abort = linger(l_onoff: 1, l_linger: 0)
        setsockopt(connection, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
        close(connection)
    }

    /// Reads until a blank line ends the head; its end offset, or nil at EOF.
    private func readUntilHeadEnd(_ connection: Int32, into buffer: inout [UInt8]) -> Int? {
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let range = buffer.firstRange(of: separator) { return range.upperBound }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(connection, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer += chunk[..<count]
        }
    }

    private func readBody(_ connection: Int32, length: Int, into buffer: inout [UInt8]) -> Bool {
        while buffer.count < length {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(connection, &chunk, chunk.count)
            if count <= 0 { return false }
            buffer += chunk[..<count]
        }
        return true
    }

    private func write(_ connection: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    static func contentLength(_ head: String) -> Int {
        for line in head.components(separatedBy: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-length" {
                return Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return 0
    }
}

/// Holds requests on their connections' threads until enough are held at
/// once, or a time passes: the barrier behind
/// ``RawSocketServer/Behaviour/answerWhenHeld(together:atMost:)``. The time
/// only bounds a test that fails (fewer requests ever arrive together); a
/// passing one is released by the count.
private final class HoldGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var holding = 0
    private var most = 0
    private var releases = 0

    var mostHeld: Int {
        condition.lock()
        defer { condition.unlock() }
        return most
    }

    func hold(together: Int, atMost: Duration) {
        condition.lock()
        defer { condition.unlock() }
        holding += 1
        most = max(most, holding)
        if holding >= together {
            releases += 1
            condition.broadcast()
        } else {
            let release = releases
            let seconds = Double(atMost.components.seconds) + Double(atMost.components.attoseconds) / 1e18
            let deadline = Date().addingTimeInterval(seconds)
            while releases == release, condition.wait(until: deadline) {}
        }
        holding -= 1
    }
}
