import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// The HTTP details of the Idempotency-Key contract, shared by the
/// middleware and its tests.
public enum IdempotencyHTTP {
    /// `Idempotency-Key`
    public static let keyHeader = HTTPField.Name("Idempotency-Key")!
    /// `Idempotent-Replayed: true` marks a replayed response.
    public static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!

    /// The draft makes the value a Structured Field string ("…"); a bare
    /// token is accepted too, as most clients send one.
    public static func parseKey(_ raw: String) -> String? {
        var value = raw.trimmingCharacters(in: .whitespaces)
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        guard (1...255).contains(value.utf8.count), value.unicodeScalars.allSatisfy({ $0.value >= 0x21 && $0.value < 0x7F }) else {
            return nil
        }
        return value
    }

    /// SHA-256 of the method, the path with query, and the body.
    static func fingerprint(_ request: Request, body: ByteBuffer) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Array(request.method.rawValue.utf8) + [0])
        hasher.update(data: Array(request.uri.string.utf8) + [0])
        hasher.update(data: body.readableBytesView)
        return Array(hasher.finalize())
    }

    static let replayedFields: Set<HTTPField.Name> = [.contentType, .location, .eTag, .lastModified]

    static func replay(_ stored: StoredResponse) -> Response {
        var fields = HTTPFields()
        for (name, value) in stored.headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        fields[replayedHeader] = "true"
        return Response(
            status: HTTPResponse.Status(code: stored.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: stored.body)))
    }

    static func problem(_ status: Int, _ type: String, _ detail: String) -> Response {
        let document: [String: Any] = [
            "type": "https://github.com/swift-outbox/problems/\(type)", "title": type, "status": status, "detail": detail,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])) ?? Data()
        var fields = HTTPFields()
        fields[.contentType] = "application/problem+json"
        return Response(status: HTTPResponse.Status(code: status), headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Reads a response's body (up to `limit`) and returns it with a copy of
    /// the response that can still be sent.
    static func collect(_ response: Response, limit: Int) async throws -> (ByteBuffer, Response) {
        let collector = Collector()
        try await response.body.write(CollectingWriter(collector: collector))
        var buffer = collector.buffer.withLock { $0 }
        if buffer.readableBytes > limit { buffer = buffer.getSlice(at: buffer.readerIndex, length: limit) ?? buffer }
        var copy = response
        copy.body = ResponseBody(byteBuffer: collector.buffer.withLock { $0 })
        return (buffer, copy)
    }

    final class Collector: Sendable {
        let buffer = Mutex(ByteBuffer())
    }

    struct CollectingWriter: ResponseBodyWriter {
        let collector: Collector
        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            collector.buffer.withLock { $0.writeBuffer(&buffer) }
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
