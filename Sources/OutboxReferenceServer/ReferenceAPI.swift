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
/// PUT  /posts/{post}/like        {"liked"}            → 200 {"id","liked"}
/// POST /messages                 {"conversation","text"} → 201 {"id": "msg-N"}; 422 if the text has #reject
/// POST /conversations/{conversation}/messages {"conversationID","body"} → 201 {"id": "msg-N"} (README's sample)
/// GET  /ledger                                        → the ledger
/// ```
final class ReferenceAPI: Sendable {
    let ledger: LedgerBox
    let faults: FaultDraw
    private let albums = Locked<Set<String>>([])

    init(ledger: LedgerBox, faults: FaultDraw) {
        self.ledger = ledger
        self.faults = faults
    }

    /// The ledger with the fault counts.
    var report: ReferenceLedger {
        var report = ledger.snapshot
        for (fault, count) in faults.counts { report.faults[fault.rawValue] = count }
        return report
    }

    func register(on router: Router<ReferenceContext>) {
        router.post("albums") { [self] request, context in
            _ = try await json(request, context)
            return apply(request) { ledger in
                ledger.albums += 1
                let name = "alb-\(ledger.albums)"
                albums.withLock { _ = $0.insert(name) }
                return (.created, ["id": name])
            }
        }
        router.post("albums/:album/photos") { [self] request, context in
            let body = try await json(request, context)
            let album = context.parameters.get("album") ?? ""
            let known = albums.withLock { $0.contains(album) }
            guard known, (body["album"] as? String).map({ $0 == album }) ?? true else {
                ledger.update { $0.rejected += 1 }
                return respond(.unprocessableContent, ["error": "unknown album \(album)"])
            }
            return apply(request) { ledger in
                ledger.photos += 1
                return (.created, ["id": "ph-\(ledger.photos)"])
            }
        }
        router.put("posts/:post/like") { [self] request, context in
            let body = try await json(request, context)
            let post = context.parameters.get("post") ?? ""
            let liked = body["liked"] as? Bool ?? true
            return apply(request) { ledger in
                ledger.likes[post] = liked
                ledger.likeWrites += 1
                return (.ok, ["id": post, "liked": liked])
            }
        }
        router.post("messages") { [self] request, context in
            let body = try await json(request, context)
            let text = body["text"] as? String ?? ""
            guard !text.contains("#reject") else {
                ledger.update { $0.rejected += 1 }
                return respond(.unprocessableContent, ["error": "message rejected by moderation"])
            }
            return apply(request) { ledger in
                ledger.messages += 1
                return (.created, ["id": "msg-\(ledger.messages)"])
            }
        }
        registerConversations(on: router)
        router.get("ledger") { [self] _, _ in
            let data = try JSONEncoder().encode(report)
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }
    }

    /// Applies a write and records it under the request's idempotency key.
    func apply(
        _ request: Request, _ effect: (inout ReferenceLedger) -> (HTTPResponse.Status, [String: Any])
    ) -> Response {
        var outcome: (HTTPResponse.Status, [String: Any]) = (.internalServerError, [:])
        let key = request.headers[IdempotencyHTTP.keyHeader].flatMap(IdempotencyHTTP.parseKey)
        ledger.update { ledger in
            outcome = effect(&ledger)
            if let key { ledger.applied[key, default: 0] += 1 } else { ledger.appliedWithoutKey += 1 }
        }
        return respond(outcome.0, outcome.1)
    }

    func json(_ request: Request, _ context: ReferenceContext) async throws -> [String: Any] {
        var request = request
        let buffer = try await request.collectBody(upTo: 1 << 20)
        guard buffer.readableBytes > 0 else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(buffer: buffer)) as? [String: Any]) ?? [:]
    }

    func respond(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
