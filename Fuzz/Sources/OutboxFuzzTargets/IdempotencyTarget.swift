import Foundation
import HTTPTypes
import Hummingbird
import IdempotencyKeyMiddleware
import Logging
import NIOCore
import OutboxLog

/// The middleware target: a request with a fuzzed method, `Idempotency-Key`
/// and body goes through ``IdempotencyMiddleware`` (in-memory key store)
/// three times — as is, again, and with another body — and the answers
/// must be the contract's:
/// - a method that does not take part passes through untouched;
/// - a key `parseKey` refuses gets 400 and runs nothing; a key it accepts is
///   1 to 255 visible ASCII characters;
/// - otherwise the first request runs once, the repeat replays its response
///   byte for byte (`Idempotent-Replayed: true`) without running it again,
///   the same key with another body gets 422, and the quoted form of the key
///   (`"key"`, a Structured Field string) names the same key.
///
/// Input: control byte bits 0–2 pick the method; the data is the header
/// value, a newline, then the body (no newline: no body).
enum IdempotencyTarget {
    static let methods: [HTTPRequest.Method] = [.post, .put, .patch, .delete, .get, .post, .post, .post]

    struct Case {
        var method: HTTPRequest.Method
        var key: String
        var body: [UInt8]
    }

    static func parse(_ input: FuzzInput) -> Case {
        let data = Array(input.data)
        let newline = data.firstIndex(of: 0x0A) ?? data.endIndex
        // What an HTTP/1 parser hands over as a field value: no CR, LF or
        // NUL, surrounding spaces trimmed (HTTPField does the same).
        let key = String(decoding: data[..<newline].filter { $0 != 0x0D && $0 != 0x00 }, as: UTF8.self)
        let body = newline < data.endIndex ? Array(data[(newline + 1)...]) : []
        return Case(method: methods[Int(input.control & 7)], key: key, body: body)
    }

    static func run(_ raw: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(raw) else { return }
        let fuzzCase = parse(input)
        if let violation = Blocking.wait({ await check(fuzzCase) }) { throw FuzzViolation(violation) }
    }

    static func run(_ bytes: [UInt8]) async throws(FuzzViolation) {
        let fuzzCase: Case? = bytes.withUnsafeBytes { raw in FuzzInput(raw).map(parse) }
        guard let fuzzCase else { return }
        if let violation = await check(fuzzCase) { throw FuzzViolation(violation) }
    }

    static func seeds() -> [[UInt8]] {
        let keys = ["0f8fad5b-d9cb-469f-a165-70867728950e", "\"4a7c-quoted\"", " padded ", "", "has space", "é-unicode",
            String(repeating: "k", count: 255), String(repeating: "k", count: 256)]
        return keys.enumerated().map { index, key in
            [UInt8(index % 5)] + Array(key.utf8) + [0x0A] + Array(#"{"text":"hello \#(index)"}"#.utf8)
        }
    }

    // MARK: The check

    /// Returns the broken rule, or `nil`.
    static func check(_ fuzzCase: Case) async -> String? {
        let handler = CountingHandler()
        let middleware = IdempotencyMiddleware<FuzzRequestContext>(store: InMemoryIdempotencyKeyStore(), configuration: configuration)
        do {
            let first = try await send(fuzzCase, to: middleware, handler)
            // The value the middleware sees: HTTPField turns bytes no field
            // may hold into spaces, as a server's parser would refuse them.
            let delivered = HTTPField(name: IdempotencyHTTP.keyHeader, value: fuzzCase.key).value
            let parsed = IdempotencyHTTP.parseKey(delivered)
            if let parsed, !(1...255).contains(parsed.utf8.count) || !parsed.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
                return "parseKey accepted \(String(reflecting: parsed)) from \(String(reflecting: delivered))"
            }
            guard middleware.configuration.methods.contains(fuzzCase.method) else {
                return first.status == 201 && handler.runs == 1 ? nil : "a \(fuzzCase.method) request did not pass through"
            }
            guard let key = parsed else {
                guard first.status == 400, handler.runs == 0 else {
                    return "the refused key \(String(reflecting: delivered)) got \(first.status) after \(handler.runs) run(s)"
                }
                return nil
            }
            guard first.status == 201, handler.runs == 1, !first.replayed else {
                return "the first request with key \(String(reflecting: key)) got \(first.status) after \(handler.runs) run(s)"
            }
            let again = try await send(fuzzCase, to: middleware, handler)
            guard again.status == first.status, again.body == first.body, again.replayed, handler.runs == 1 else {
                return "the repeat with key \(String(reflecting: key)) got \(again.status) (replayed: \(again.replayed)) after \(handler.runs) run(s)"
            }
            if !key.contains("\"") {
                var quoted = fuzzCase
                quoted.key = "\"\(key)\""
                let replay = try await send(quoted, to: middleware, handler)
                guard replay.replayed, replay.body == first.body, handler.runs == 1 else {
                    return "the quoted key \(quoted.key) was not the same key as \(key): \(replay.status)"
                }
            }
            var other = fuzzCase
            other.body.append(0x21)
            let reused = try await send(other, to: middleware, handler)
            guard reused.status == 422, handler.runs == 1 else {
                return "the key \(String(reflecting: key)) reused with another body got \(reused.status) after \(handler.runs) run(s)"
            }
            return nil
        } catch {
            return "the middleware threw \(error)"
        }
    }

    static let configuration: IdempotencyMiddleware<FuzzRequestContext>.Configuration = {
        var configuration = IdempotencyMiddleware<FuzzRequestContext>.Configuration()
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        configuration.now = { now }
        configuration.expiryInterval = nil
        return configuration
    }()

    struct Answer {
        var status: Int
        var body: [UInt8]
        var replayed: Bool
    }

    static func send(
        _ fuzzCase: Case, to middleware: IdempotencyMiddleware<FuzzRequestContext>, _ handler: CountingHandler
    ) async throws -> Answer {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields.append(HTTPField(name: IdempotencyHTTP.keyHeader, value: fuzzCase.key))
        let head = HTTPRequest(method: fuzzCase.method, scheme: "http", authority: "127.0.0.1", path: "/messages", headerFields: fields)
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: fuzzCase.body)))
        let context = FuzzRequestContext(source: FuzzContextSource())
        let response = try await middleware.handle(request, context: context) { request, _ in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            let run = handler.run()
            return Response(
                status: .created, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"run":\#(run),"bytes":\#(body.readableBytes)}"#)))
        }
        let collector = BodyCollector()
        try await response.body.write(collector)
        return Answer(
            status: Int(response.status.code), body: collector.bytes.withLock { $0 },
            replayed: response.headers[IdempotencyHTTP.replayedHeader] == "true")
    }
}

/// A context for calling the middleware directly, without a server.
struct FuzzRequestContext: RequestContext {
    typealias Source = FuzzContextSource
    var coreContext: CoreRequestContextStorage
    init(source: FuzzContextSource) { coreContext = .init(source: source) }
}

struct FuzzContextSource: RequestContextSource {
    var logger = Logger(label: "outbox.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
}
