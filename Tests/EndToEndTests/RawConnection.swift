import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to a loopback port, for tests that must misbehave
/// the way URLSession never does (trickle a head, stay idle, stop mid-upload).
/// Every blocking call runs on a Dispatch thread, never the cooperative pool
/// (the server under test runs there).
final class RawConnection: @unchecked Sendable {
    let descriptor: Int32

    enum Event: Equatable {
        /// The server closed the connection (or reset it).
        case closed
        /// Bytes arrived.
        case data([UInt8])
        /// Nothing happened within the wait.
        case quiet
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private init(descriptor: Int32) { self.descriptor = descriptor }

    static func connect(port: Int) async throws -> RawConnection {
        try await blocking { try open(port: port) }
    }

    /// Connects and sends `request` on the same thread, with no hop through
    /// the cooperative pool between the two: a connection the server accepts
    /// from its backlog already holds the request, so a deadline counted
    /// from the accept cannot close it while a busy pool delays the send.
    static func connect(port: Int, sending request: String) async throws -> RawConnection? {
        try await blocking {
            let connection = try open(port: port)
            guard connection.sendNow(Array(request.utf8)) else {
                connection.close()
                return nil
            }
            return connection
        }
    }

    private static func open(port: Int) throws -> RawConnection {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw Failure(description: "connect: errno \(errno)")
        }
        return RawConnection(descriptor: fd)
    }

    /// Sends `bytes`; false if the server already closed the connection.
    func send(_ bytes: [UInt8]) async -> Bool {
        await Self.blockingValue { self.sendNow(bytes) }
    }

    /// Blocks this thread until `bytes` are sent or the send fails.
    private func sendNow(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    func send(_ text: String) async -> Bool { await send(Array(text.utf8)) }

    /// Waits up to `milliseconds` for data or the server's close.
    func next(within milliseconds: Int32) async -> Event {
        await Self.blockingValue { [descriptor] in
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, milliseconds) > 0 else { return .quiet }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            return n <= 0 ? .closed : .data(Array(buffer[..<n]))
        }
    }

    /// Reads until the server closes the connection or `milliseconds` pass
    /// with nothing new; returns everything read and whether it closed.
    func readUntilClosed(quietFor milliseconds: Int32 = 10_000) async -> (bytes: [UInt8], closed: Bool) {
        var bytes: [UInt8] = []
        while true {
            switch await next(within: milliseconds) {
            case .closed: return (bytes, true)
            case .quiet: return (bytes, false)
            case .data(let more): bytes += more
            }
        }
    }

    func close() { Glibc.close(descriptor) }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    private static func blockingValue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }
}
