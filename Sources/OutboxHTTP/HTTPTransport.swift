import Foundation
import Outbox

/// The seam between ``HTTPOutboxHandler`` and an HTTP client: sends one
/// request, exactly as given, once.
///
/// A transport must not retry, must not follow redirects, and must not add
/// or reorder anything between two sends of the same ``HTTPTransportRequest``:
/// every resend is the dispatcher's decision, recorded as an attempt, and
/// the server must see the same method, URL, headers and bytes each time
/// (Idempotency-Key servers fingerprint requests). It reports how far the
/// request got when it failed, because that decides what the failure means:
/// a request that never fully left cannot have been applied, one that did
/// may have been.
///
/// ``AsyncHTTPClientTransport`` (async-http-client, on SwiftNIO) is the
/// default on Linux and servers; ``URLSessionTransport`` on Apple
/// platforms. Tests inject faults at the socket level by pointing either at
/// a loopback server, or implement this protocol themselves.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and reads the whole response, within `timeout`
    /// (connecting included). Returns promptly when the task is cancelled,
    /// as ``HTTPTransportFailure`` with what was known by then.
    func send(_ request: HTTPTransportRequest, timeout: Duration) async -> HTTPTransportResult
}

/// One request, ready for the wire: nothing is added to it but what HTTP/1.1
/// framing needs (`Host`, `Content-Length`).
public struct HTTPTransportRequest: Sendable, Hashable {
    public var method: String
    public var url: URL
    /// In the order they are sent. Names as given.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The body, when it is kept in a file (an entry above the store's
    /// `largePayloadThreshold`); ``body`` is then empty. A transport streams
    /// it from the file (``OutboxLargePayload/makeChunkReader(chunkBytes:)``:
    /// each chunk checked, the last one only once the whole body's SHA-256
    /// matched), or uploads the file itself when it is plain
    /// (``OutboxLargePayload/plainFile``), with its length as `Content-Length`.
    public var streamedBody: OutboxLargePayload?

    public init(
        method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8],
        streamedBody: OutboxLargePayload? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.streamedBody = streamedBody
    }

    /// The body's length in bytes, wherever it is.
    public var bodyLength: Int { streamedBody?.count ?? body.count }

    public static func == (a: Self, b: Self) -> Bool {
        a.method == b.method && a.url == b.url && a.body == b.body && a.streamedBody == b.streamedBody
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(body)
        hasher.combine(streamedBody)
        for header in headers {
            hasher.combine(header.name)
            hasher.combine(header.value)
        }
    }

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// What became of one send.
public enum HTTPTransportResult: Sendable, Hashable {
    /// A whole response arrived. Header names are lower-cased.
    case response(status: Int, headers: [String: String], body: [UInt8])
    /// No (whole) response.
    case failure(HTTPTransportFailure)
}

/// Why a send has no response, and how far the request got.
public struct HTTPTransportFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// How far the request got before it failed.
    public enum Stage: Sendable, Hashable {
        /// The request did not (fully) leave: no connection (refused, DNS,
        /// unreachable, connect timeout), or the connection broke before
        /// its last byte was written. The server cannot have applied it.
        case notSent
        /// The whole request was written; no whole answer came back (the
        /// connection closed, reset or timed out). It may have been applied.
        case sent
    }

    public enum Kind: Sendable, Hashable {
        /// Nothing listens there, or the host or network is unreachable.
        case cannotConnect
        /// The host name did not resolve.
        case dns
        /// The connection was closed or reset.
        case connectionLost
        /// The timeout passed.
        case timedOut
        /// The task was cancelled.
        case cancelled
        /// The URL cannot be sent (bad scheme, no host).
        case invalidRequest
        /// Anything else the client reported.
        case other
    }

    public var stage: Stage
    public var kind: Kind
    /// The client's own words, for logs and the entry's last error.
    public var detail: String

    public init(stage: Stage, kind: Kind, detail: String) {
        self.stage = stage
        self.kind = kind
        self.detail = detail
    }

    public var description: String {
        let what: String
        switch kind {
        case .cannotConnect: what = "cannot connect to host"
        case .dns: what = "host name not found"
        case .connectionLost: what = "connection lost"
        case .timedOut: what = "request timed out"
        case .cancelled: what = "cancelled"
        case .invalidRequest: what = "invalid request"
        case .other: what = "network error"
        }
        let when = stage == .notSent ? "before the request was sent" : "after the request was sent"
        return "\(what) \(when) (\(detail))"
    }
}

/// The transport ``HTTPOutboxHandler`` uses unless told otherwise:
/// URLSession on Apple platforms, async-http-client elsewhere.
public enum DefaultHTTPTransport {
    public static var shared: any HTTPTransport {
        #if canImport(Darwin)
        URLSessionTransport.shared
        #else
        AsyncHTTPClientTransport.shared
        #endif
    }
}
