import Foundation
import IdempotencyKeyMiddleware
import OutboxLocking

/// A write the reference API applies.
public enum ReferenceWrite: Sendable, Hashable {
    /// `POST /albums` → `alb-N`
    case album(title: String)
    /// `POST /albums/{album}/photos` → `ph-N`; refused (422) if the album is unknown.
    case photo(album: String, caption: String)
    /// `PUT /posts/{post}/like` → the post's new state.
    case like(post: String, liked: Bool)
    /// `POST /messages`, `POST /conversations/{conversation}/messages` → `msg-N`.
    case message(conversation: String, text: String)
}

/// The API's answer to a write: a status and a JSON body (keys sorted), sent
/// with `Content-Type: application/json`.
public struct ReferenceAnswer: Sendable, Hashable {
    public var status: Int
    public var body: [UInt8]

    /// Whether the write was applied (a 2xx), rather than refused.
    public var applied: Bool { (200..<300).contains(status) }

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    /// An answer whose body is `object` as JSON, keys sorted.
    public init(status: Int, json object: [String: Any]) {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        self.init(status: status, body: Array(data))
    }

    /// The answer as the idempotency middleware stores it: a replay of it
    /// is byte for byte the response the API sends.
    public var stored: StoredResponse {
        StoredResponse(status: status, headers: ["content-type": "application/json"], body: body)
    }

    /// 422: the photo names an album nobody created.
    public static func unknownAlbum(_ album: String) -> ReferenceAnswer { ReferenceAnswer(status: 422, json: ["error": "unknown album \(album)"]) }
}

/// Where the reference API applies its writes and counts them by
/// idempotency key: in memory (the default), or in a database several
/// server processes share, so that the ledger counts applies across them.
public protocol ReferenceWrites: Sendable {
    /// Applies `write` once (or refuses it: a photo of an unknown album) and
    /// counts it under `key`. Ids are `alb-N`, `ph-N`, `msg-N`, unique
    /// across everyone sharing the store.
    func apply(_ write: ReferenceWrite, key: String?) async throws -> ReferenceAnswer
    /// What was applied: the ledger's `applied`, `appliedWithoutKey`,
    /// `albums`, `photos`, `messages`, `likes` and `likeWrites` (the rest is
    /// counted by each server process).
    func applied() async throws -> ReferenceLedger
}

/// The writes in this process's memory, in the server's ledger.
final class InMemoryReferenceWrites: ReferenceWrites {
    let ledger: LedgerBox
    private let albums = Locked<Set<String>>([])

    init(ledger: LedgerBox) { self.ledger = ledger }

    func apply(_ write: ReferenceWrite, key: String?) async throws -> ReferenceAnswer { applyNow(write, key: key) }

    func applyNow(_ write: ReferenceWrite, key: String?) -> ReferenceAnswer {
        if case .photo(let album, _) = write, !albums.withLock({ $0.contains(album) }) { return .unknownAlbum(album) }
        var answer = ReferenceAnswer(status: 500, body: [])
        ledger.update { ledger in
            switch write {
            case .album:
                ledger.albums += 1
                albums.withLock { _ = $0.insert("alb-\(ledger.albums)") }
                answer = ReferenceAnswer(status: 201, json: ["id": "alb-\(ledger.albums)"])
            case .photo:
                ledger.photos += 1
                answer = ReferenceAnswer(status: 201, json: ["id": "ph-\(ledger.photos)"])
            case .like(let post, let liked):
                ledger.likes[post] = liked
                ledger.likeWrites += 1
                answer = ReferenceAnswer(status: 200, json: ["id": post, "liked": liked])
            case .message:
                ledger.messages += 1
                answer = ReferenceAnswer(status: 201, json: ["id": "msg-\(ledger.messages)"])
            }
            if let key { ledger.applied[key, default: 0] += 1 } else { ledger.appliedWithoutKey += 1 }
        }
        return answer
    }

    func applied() async throws -> ReferenceLedger { ledger.snapshot }
}
