#if canImport(Darwin)
import Foundation
import Outbox

/// Sends requests with `URLSession`: the transport on Apple platforms.
///
/// Apple-only, so it is not compiled on Linux: kept small enough to review
/// by reading. Each request is an upload task from `Data`, so if the system
/// replays a request on a fresh connection (it may when a reused keep-alive
/// connection dies before the first response byte) it resends the same
/// bytes; a per-task delegate refuses every redirect (the 3xx comes back as
/// it is) and notes when the whole body was sent, so a failure says whether
/// the request left.
public final class URLSessionTransport: HTTPTransport {
    public static let shared = URLSessionTransport()

    private let session: URLSession

    /// - Parameter configuration: default `.ephemeral` (no cookies, no cache).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    public func send(_ request: HTTPTransportRequest, timeout: Duration) async -> HTTPTransportResult {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.addValue(value, forHTTPHeaderField: name) }
        urlRequest.timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let observer = TaskObserver()
        do {
            let (data, response) = try await upload(urlRequest, request, observer: observer)
            guard let http = response as? HTTPURLResponse else {
                return .failure(HTTPTransportFailure(stage: .sent, kind: .other, detail: "not an HTTP response"))
            }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            return .response(
                status: http.statusCode, headers: headers, body: Array(data.prefix(HTTPOutboxHandler.maximumResponseBytes)))
        } catch {
            return .failure(Self.failure(error, sent: observer.bodySent))
        }
    }

    /// An upload from `Data`, or, for a body kept in a file: from the file
    /// itself when it is plain (checked first), else from its bytes, read
    /// and checked off the cooperative pool (a sealed file is never
    /// decrypted to disk).
    private func upload(
        _ urlRequest: URLRequest, _ request: HTTPTransportRequest, observer: TaskObserver
    ) async throws -> (Data, URLResponse) {
        guard let file = request.streamedBody else {
            return try await session.upload(for: urlRequest, from: Data(request.body), delegate: observer)
        }
        if let path = file.plainFile {
            try await file.verify()
            return try await session.upload(for: urlRequest, fromFile: URL(fileURLWithPath: path.string), delegate: observer)
        }
        return try await session.upload(for: urlRequest, from: Data(try await file.bytes()), delegate: observer)
    }

    static func failure(_ error: any Error, sent: Bool) -> HTTPTransportFailure {
        let stage: HTTPTransportFailure.Stage = sent ? .sent : .notSent
        guard let error = error as? URLError else {
            return HTTPTransportFailure(stage: stage, kind: error is CancellationError ? .cancelled : .other, detail: "\(error)")
        }
        let detail = "URLError \(error.code.rawValue)"
        switch error.code {
        case .cannotConnectToHost, .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff:
            return HTTPTransportFailure(stage: .notSent, kind: .cannotConnect, detail: detail)
        case .cannotFindHost, .dnsLookupFailed:
            return HTTPTransportFailure(stage: .notSent, kind: .dns, detail: detail)
        case .networkConnectionLost:
            return HTTPTransportFailure(stage: stage, kind: .connectionLost, detail: detail)
        case .timedOut:
            return HTTPTransportFailure(stage: stage, kind: .timedOut, detail: detail)
        case .cancelled:
            return HTTPTransportFailure(stage: stage, kind: .cancelled, detail: detail)
        case .badURL, .unsupportedURL:
            return HTTPTransportFailure(stage: .notSent, kind: .invalidRequest, detail: detail)
        default:
            return HTTPTransportFailure(stage: stage, kind: .other, detail: detail)
        }
    }
}

/// One task's delegate: refuses redirects, notes when the body was sent.
private final class TaskObserver: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // @unchecked: `sent` is only touched under `lock`.
    private let lock = NSLock()
    private var sent = false

    var bodySent: Bool { lock.withLock { sent } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)  // never follow: the caller sees the 3xx
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        if totalBytesSent >= totalBytesExpectedToSend { lock.withLock { sent = true } }
    }
}
#endif
