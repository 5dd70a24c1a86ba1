import AsyncHTTPClient
import Foundation
import Outbox
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import OutboxLocking

/// Sends requests with async-http-client (SwiftNIO): the transport on Linux
/// and servers.
///
/// Configured for a client that keeps its word: redirects are never
/// followed (a 3xx is returned as it is), a failed connection attempt is
/// not retried inside the client (the dispatcher decides), and a request is
/// written once: async-http-client never re-sends a request on its own. It
/// reports when the whole request was written (``HTTPTransportFailure/Stage``).
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// One client for the process, shared by every handler that does not
    /// bring its own. It lives as long as the process (no shutdown needed).
    public static let shared = AsyncHTTPClientTransport(configuration: Configuration())

    public struct Configuration: Sendable, Hashable {
        /// Connections idle this long are closed by the client. Default 20 s:
        /// shorter than nginx's and most load balancers' (60–75 s), though
        /// some servers close sooner (uvicorn and Node.js after 5 s). A
        /// connection the server closed while idle is dropped from the pool
        /// when its close arrives; one closed just as a request goes out on
        /// it is an interrupted attempt, resent with the same key.
        public var idleTimeout: Duration = .seconds(20)
        /// At most this many connections per host: HTTP/1.1 carries one
        /// request at a time per connection, so this caps the requests in
        /// flight to a host, whatever the dispatcher's
        /// `maximumConcurrentDeliveries`; requests past it wait for a
        /// connection with their timeout running. Default 1024: the
        /// dispatcher bounds what runs at once, and a connection is opened
        /// only when a request needs one. (Over TLS, a server that offers
        /// HTTP/2 gets every request multiplexed on one connection.)
        public var connectionsPerHost = 1024

        public init() {}
    }

    private let client: HTTPClient
    private let streamsRunning = Locked(0)

    /// Bodies being streamed from their files right now.
    package var bodyStreamsRunning: Int { streamsRunning.withLock { $0 } }

    /// A transport with its own connection pool. Call ``shutdown()`` before
    /// dropping it (``shared`` needs none).
    public init(configuration: Configuration) {
        var settings = HTTPClient.Configuration()
        settings.redirectConfiguration = .disallow
        settings.decompression = .disabled
        settings.connectionPool = .init(
            idleTimeout: .nanoseconds(Self.nanoseconds(configuration.idleTimeout)),
            concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, configuration.connectionsPerHost))
        // A refused connection is an answer the dispatcher must see, not
        // something to retry quietly until the timeout.
        settings.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: settings,
            backgroundActivityLogger: Logger(label: "outbox.http", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Closes the connections of a transport made with ``init(configuration:)``.
    public func shutdown() async throws { try await client.shutdown() }

    /// Runs `body` with a transport of its own and shuts it down when `body`
    /// returns or throws: a transport dropped without ``shutdown()`` leaks
    /// its connections (and stops a debug build).
    public static func with<Result>(
        configuration: Configuration, isolation: isolated (any Actor)? = #isolation,
        _ body: (AsyncHTTPClientTransport) async throws -> Result
    ) async throws -> Result {
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let result: Result
        do {
            result = try await body(transport)
        } catch {
            try? await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
        return result
    }

    public func send(_ request: HTTPTransportRequest, timeout: Duration) async -> HTTPTransportResult {
        var headers = HTTPHeaders()
        for (name, value) in request.headers { headers.add(name: name, value: value) }
        let streamed = request.streamedBody.map { StreamedRequestBody(file: $0, running: streamsRunning) }
        let prepared: HTTPClient.Request
        do {
            let body: HTTPClient.Body?
            if let streamed {
                body = streamed.body
            } else {
                body = request.body.isEmpty && !Self.sendsEmptyBody(request.method) ? nil : .bytes(request.body)
            }
            prepared = try HTTPClient.Request(
                url: request.url, method: HTTPMethod(rawValue: request.method), headers: headers, body: body)
        } catch {
            return .failure(HTTPTransportFailure(stage: .notSent, kind: .invalidRequest, detail: "\(error)"))
        }
        let result = await execute(prepared, timeout: timeout, bodyLength: Self.bodyLength(of: prepared))
        // Nothing of the request outlives it: a file body's pump stops here.
        await streamed?.finish()
        return result
    }

    private func execute(_ request: HTTPClient.Request, timeout: Duration, bodyLength: Int?) async -> HTTPTransportResult {
        let recorder = ResponseRecorder(bodyLength: bodyLength)
        let deadline = NIODeadline.now() + .nanoseconds(max(1, Self.nanoseconds(timeout)))
        let task = client.execute(request: request, delegate: recorder, deadline: deadline)
        do {
            let response = try await withTaskCancellationHandler {
                try await task.futureResult.get()
            } onCancel: {
                task.cancel()
            }
            return .response(status: response.status, headers: response.headers, body: response.body)
        } catch {
            return .failure(Self.failure(error, sent: recorder.requestSent))
        }
    }

    /// `duration` in nanoseconds, at most a century (SwiftNIO's clock adds
    /// it to the present in 64 bits): longer is as good as forever.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let century: Int64 = 100 * 365 * 24 * 3600
        let (seconds, attoseconds) = duration.components
        guard seconds < century else { return century * 1_000_000_000 }
        guard seconds >= 0 else { return 0 }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The body's bytes on the wire; `nil` if only its end tells (chunked:
    /// the terminating chunk is written last).
    static func bodyLength(of request: HTTPClient.Request) -> Int? {
        guard let body = request.body else { return 0 }
        guard !request.headers.contains(name: "transfer-encoding"), let length = body.contentLength else { return nil }
        return Int(clamping: length)
    }

    /// `POST`, `PUT` and `PATCH` carry a `Content-Length: 0` even when empty.
    private static func sendsEmptyBody(_ method: String) -> Bool {
        ["POST", "PUT", "PATCH"].contains(method.uppercased())
    }

    static func failure(_ error: any Error, sent: Bool) -> HTTPTransportFailure {
        let stage: HTTPTransportFailure.Stage = sent ? .sent : .notSent
        let detail = "\(error)"
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .getConnectionFromPoolTimeout:
                return HTTPTransportFailure(stage: stage, kind: .timedOut, detail: detail)
            case .cancelled:
                return HTTPTransportFailure(stage: stage, kind: .cancelled, detail: detail)
            case .remoteConnectionClosed, .uncleanShutdown:
                return HTTPTransportFailure(stage: stage, kind: .connectionLost, detail: detail)
            case .invalidURL, .emptyHost, .emptyScheme:
                return HTTPTransportFailure(stage: .notSent, kind: .invalidRequest, detail: detail)
            default:
                return HTTPTransportFailure(stage: stage, kind: .other, detail: detail)
            }
        }
        if error is CancellationError { return HTTPTransportFailure(stage: stage, kind: .cancelled, detail: detail) }
        if let error = error as? NIOConnectionError {
            let dns = error.dnsAError != nil || error.dnsAAAAError != nil
            let kind: HTTPTransportFailure.Kind = dns && error.connectionErrors.isEmpty ? .dns : .cannotConnect
            return HTTPTransportFailure(stage: .notSent, kind: kind, detail: detail)
        }
        if error is SocketAddressError { return HTTPTransportFailure(stage: .notSent, kind: .dns, detail: detail) }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ENETDOWN, EADDRNOTAVAIL:
                return HTTPTransportFailure(stage: .notSent, kind: .cannotConnect, detail: detail)
            case ECONNRESET, EPIPE:
                return HTTPTransportFailure(stage: stage, kind: .connectionLost, detail: detail)
            case ETIMEDOUT:
                return HTTPTransportFailure(stage: stage, kind: .timedOut, detail: detail)
            default:
                return HTTPTransportFailure(stage: stage, kind: .other, detail: detail)
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return HTTPTransportFailure(stage: .notSent, kind: .cannotConnect, detail: detail)
            case .ioOnClosedChannel, .outputClosed, .inputClosed, .alreadyClosed, .eof:
                return HTTPTransportFailure(stage: stage, kind: .connectionLost, detail: detail)
            default: return HTTPTransportFailure(stage: stage, kind: .other, detail: detail)
            }
        }
        return HTTPTransportFailure(stage: stage, kind: .other, detail: detail)
    }
}
