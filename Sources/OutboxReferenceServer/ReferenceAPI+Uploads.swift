import Crypto
import Foundation
import HTTPTypes
import Hummingbird

extension ReferenceAPI {
    /// The largest upload the route reads: a 50 MB photo and more.
    static let maximumUploadBytes = 128 << 20

    /// A photo's bytes uploaded as they are (the outbox's large payloads):
    ///
    /// ```
    /// POST /albums/{album}/uploads   <the photo's bytes>   (Content-Digest: sha-256=:<base64>:)
    ///   → 201 {"id": "ph-N"}
    ///   → 422 if the album is unknown, or if the bytes do not match the
    ///         request's Content-Digest (RFC 9530): the server never keeps
    ///         a body other than the one the client meant
    /// ```
    ///
    /// Counted with the other photos, under its idempotency key. The
    /// idempotency middleware in front must accept bodies this large
    /// (`IdempotencyMiddleware.Configuration.maximumBodySize`).
    func registerUploads(on router: Router<ReferenceContext>) {
        router.post("albums/:album/uploads") { [self] request, context in
            var request = request
            let body = try await request.collectBody(upTo: Self.maximumUploadBytes)
            let bytes = Data(buffer: body)
            if let declared = request.headers[HTTPField.Name("Content-Digest")!] {
                guard declared == ReferenceServer.contentDigest(of: bytes) else {
                    return reject(["error": "the body (\(bytes.count) bytes) does not match its Content-Digest"])
                }
            }
            let album = context.parameters.get("album") ?? ""
            return try await apply(.photo(album: album, caption: "upload of \(bytes.count) bytes"), request)
        }
    }
}

extension ReferenceServer {
    /// The `Content-Digest` field value (RFC 9530, SHA-256) of `bytes`: what
    /// a client sends with an upload to `POST /albums/{album}/uploads`.
    public static func contentDigest(of bytes: some DataProtocol) -> String {
        "sha-256=:" + Data(SHA256.hash(data: bytes)).base64EncodedString() + ":"
    }
}
