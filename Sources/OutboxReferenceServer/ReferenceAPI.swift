import Foundation
import HTTPTypes
import Hummingbird
import IdempotencyKeyMiddleware
import NIOCore
import OutboxLocking

/// The reference API: albums, photos, likes and messages — enough to show
/// offline creation, `local:` ids, coalescing and rejections.
///
/// ```
/// POST /albums                   {"title"}            → 201 {"id": "alb-N"}
/// POST /albums/{album}/photos    {"caption","album"}  → 201 {"id": "ph-N"}; 422 if the album is unknown
/// POST /albums/{album}/uploads   <bytes>              → 201 {"id": "ph-N"}; 422 if the album is unknown or the bytes
///                                                        do not match their Content-Digest
/// PUT  /posts/{post}/like        {"liked"}            → 200 {"id","liked"}
/// POST /messages                 {"conversation","text"} → 201 {"id": "msg-N"}; 422 if the text has #reject
/// POST /conversations/{conversation}/messages {"conversationID","body"} → 201 {"id": "msg-N"} (README's sample)
/// GET  /ledger                                        → the ledger
/// ```
final class ReferenceAPI: Sendable {
    /// What this process counts: rejections, and (with ``CountingKeyStore``)
    /// what the middleware absorbed; with in-memory writes, the writes too.
    let ledger: LedgerBox
    let faults: FaultDraw
    let writes: any ReferenceWrites

    init(ledger: LedgerBox, faults: FaultDraw, writes: (any ReferenceWrites)?) {
        self.ledger = ledger
        self.faults = faults
        self.writes = writes ?? InMemoryReferenceWrites(ledger: ledger)
    }

    /// This process's counts, with the fault counts.
    private var local: ReferenceLedger {
        var report = ledger.snapshot
        for (fault, count) in faults.counts { report.faults[fault.rawValue] = count }
        return report
    }

    /// The ledger, when the writes are in this process's memory; with a
    /// shared writes store, only this process's counts.
    var report: ReferenceLedger { local }

    /// The ledger: this process's counts and what the writes store applied.
    func currentReport() async throws -> ReferenceLedger {
        if writes is InMemoryReferenceWrites { return local }
        return local.with(applied: try await writes.applied())
    }

    func register(on router: Router<ReferenceContext>) {
        router.post("albums") { [self] request, context in
            let body = try await json(request, context)
            return try await apply(.album(title: body["title"] as? String ?? ""), request)
        }
        router.post("albums/:album/photos") { [self] request, context in
            let body = try await json(request, context)
            let album = context.parameters.get("album") ?? ""
            guard (body["album"] as? String).map({ $0 == album }) ?? true else {
                return reject(["error": "unknown album \(album)"])
            }
            return try await apply(.photo(album: album, caption: body["caption"] as? String ?? ""), request)
        }
        router.put("posts/:post/like") { [self] request, context in
            let body = try await json(request, context)
            let post = context.parameters.get("post") ?? ""
            return try await apply(.like(post: post, liked: body["liked"] as? Bool ?? true), request)
        }
        router.post("messages") { [self] request, context in
            let body = try await json(request, context)
            let text = body["text"] as? String ?? ""
            guard !text.contains("#reject") else { return reject(["error": "message rejected by moderation"]) }
            return try await apply(.message(conversation: body["conversation"] as? String ?? "", text: text), request)
        }
        registerConversations(on: router)
        registerUploads(on: router)
        router.get("ledger") { [self] _, _ in
            let data = try JSONEncoder().encode(try await currentReport())
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }
    }

    /// Applies a write through the writes store, under the request's
    /// idempotency key; a refusal (422) is counted as rejected.
    func apply(_ write: ReferenceWrite, _ request: Request) async throws -> Response {
        let key = request.headers[IdempotencyHTTP.keyHeader].flatMap(IdempotencyHTTP.parseKey)
        let answer = try await writes.apply(write, key: key)
        if !answer.applied { ledger.update { $0.rejected += 1 } }
        return response(answer)
    }

    /// A 422 for a request the API refuses before it reaches the writes.
    func reject(_ object: [String: Any]) -> Response {
        ledger.update { $0.rejected += 1 }
        return response(ReferenceAnswer(status: 422, json: object))
    }

    func response(_ answer: ReferenceAnswer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    func json(_ request: Request, _ context: ReferenceContext) async throws -> [String: Any] {
        var request = request
        let buffer = try await request.collectBody(upTo: 1 << 20)
        guard buffer.readableBytes > 0 else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(buffer: buffer)) as? [String: Any]) ?? [:]
    }
}
