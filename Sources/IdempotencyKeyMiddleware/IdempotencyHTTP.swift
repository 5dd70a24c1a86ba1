import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import OutboxLocking

/// The HTTP details of the Idempotency-Key contract, shared by the
/// middleware and its tests.
public enum IdempotencyHTTP {
    /// `Idempotency-Key`
    public static let keyHeader = HTTPField.Name("Idempotency-Key")!
    /// `Idempotent-Replayed: true` marks a response answered from the key
    /// store rather than by running the request.
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

    /// Why a request's body was not read to its end.
    struct BodyRefusal: Error {
        var response: Response
    }

    /// Reads the request's body, at most `limit` bytes. A body announced or
    /// found larger is refused with 413, one that cannot be read (a
    /// malformed chunked encoding) with 400; both close the connection
    /// (`Connection: close`) instead of reading the rest.
    static func readBody(of request: inout Request, limit: Int) async -> Result<ByteBuffer, BodyRefusal> {
        func tooLarge() -> BodyRefusal {
            BodyRefusal(response: IdempotencyProblem.bodyTooLarge.closingResponse(detail: "The request body exceeds \(limit) bytes."))
        }
        if let announced = request.headers[.contentLength].flatMap({ Int($0) }), announced > limit { return .failure(tooLarge()) }
        do {
            return .success(try await request.collectBody(upTo: limit))
        } catch is NIOTooManyBytesError {
            return .failure(tooLarge())
        } catch {
            return .failure(BodyRefusal(response: IdempotencyProblem.malformedBody.closingResponse(
                detail: "The request body could not be read: \(error).")))
        }
    }

    /// SHA-256 of the method, the path with query, and the body.
    static func fingerprint(_ request: Request, body: ByteBuffer) -> [UInt8] {
        fingerprint(method: request.method.rawValue, uri: request.uri.string, body: body.readableBytesView)
    }

    static func fingerprint(method: String, uri: String, body: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Array(method.utf8) + [0])
        hasher.update(data: Array(uri.utf8) + [0])
        hasher.update(data: Array(body))
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

    /// Reads a response's whole body and returns it with a copy of the
    /// response that can still be sent.
    static func collect(_ response: Response) async throws -> (ByteBuffer, Response) {
        let collector = Collector()
        try await response.body.write(CollectingWriter(collector: collector))
        let buffer = collector.buffer.withLock { $0 }
        var copy = response
        copy.body = ResponseBody(byteBuffer: buffer)
        return (buffer, copy)
    }

    final class Collector: Sendable {
        let buffer = Locked(ByteBuffer())
    }

    struct CollectingWriter: ResponseBodyWriter {
        let collector: Collector
        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            _ = collector.buffer.withLock { $0.writeBuffer(&buffer) }
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
