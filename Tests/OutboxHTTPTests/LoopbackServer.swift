import CLITestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OutboxLocking

/// A request the test server received.
struct ReceivedRequest: Sendable {
    var method: String
    var path: String
    /// Header names in lower case.
    var headers: [String: String]
    var body: String
}

/// A real HTTP server on 127.0.0.1 (an ephemeral port), answering each path
/// from a script: status, headers, body — or no answer at all.
final class LoopbackServer: Sendable {
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: String = ""
        /// Never answer (until the server stops): the client must time out.
        var withhold = false
    }

    private let received = Locked<[ReceivedRequest]>([])
    private let replies: @Sendable (ReceivedRequest, Int) -> Reply
    private let task: Locked<Task<Void, any Error>?> = Locked(nil)
    let port: Int

    /// Starts the server; `replies` gets each request and how many requests
    /// came before it on the same path.
    init(replies: @escaping @Sendable (ReceivedRequest, Int) -> Reply) async throws {
        self.replies = replies
        let router = Router()
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "loopback-server")
        logger.logLevel = .critical
        let holder = Box()
        router.on("**", method: .post) { request, _ in try await holder.server!.respond(request) }
        router.on("**", method: .put) { request, _ in try await holder.server!.respond(request) }
        router.on("**", method: .get) { request, _ in try await holder.server!.respond(request) }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let running = Task { try await app.run() }
        var iterator = portStream.makeAsyncIterator()
        port = await iterator.next() ?? 0
        task.withLock { $0 = running }
        holder.server = self
    }

    private final class Box: @unchecked Sendable {
        // Set once, before the first request can arrive.
        var server: LoopbackServer?
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/api")! }

    var requests: [ReceivedRequest] { received.withLock { $0 } }

    func stop() { task.withLock { $0?.cancel() } }

    private func respond(_ request: Request) async throws -> Response {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let body = try await request.body.collect(upTo: 1 << 20)
        let record = ReceivedRequest(
            method: request.method.rawValue, path: request.uri.string, headers: headers, body: String(buffer: body))
        let earlier = received.withLock { received -> Int in
            let count = received.filter { $0.path == record.path }.count
            received.append(record)
            return count
        }
        let reply = replies(record, earlier)
        if reply.withhold { try await suspendUntilCancelled() }
        var fields = HTTPFields()
        for (name, value) in reply.headers { fields[HTTPField.Name(name)!] = value }
        return Response(
            status: HTTPResponse.Status(code: reply.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(string: reply.body)))
    }
}

/// A TCP server that reads a request and closes the connection without
/// answering: the response is lost.
final class DroppingServer: Sendable {
    let port: Int
    private let socket: Int32

    init() throws {
        let listener = Glue.socket()
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        socket = listener
        let thread = Thread {
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 65536)
                _ = read(connection, &buffer, buffer.count)
                close(connection)
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}

private enum Glue {
    static func socket() -> Int32 {
        #if canImport(Glibc)
        Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
    }
}
