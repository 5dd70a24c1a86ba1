import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxHTTP
import OutboxReferenceServer
import Testing

/// A photo upload as an app writes it: an album created offline, then the
/// photo's bytes, posted to the album's `local:` id once it has a server id.
struct CreateUploadAlbum: OutboxAction, Encodable {
    static let type = "album"
    let title: String
    var method: String { "POST" }
    var endpoint: String { "/albums" }
}

struct UploadOriginal: OutboxAction {
    static let type = "upload"
    let album: OutboxEntry.ID
    let bytes: [UInt8]
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/uploads" }
    var dependencies: [OutboxEntry.ID] { [album] }
    var headers: [String: String] {
        ["Content-Type": "image/jpeg", "Content-Digest": ReferenceServer.contentDigest(of: bytes)]
    }
    func payload() throws -> [UInt8] { bytes }
}

/// A 50 MB photo upload works end to end,
/// streamed from its file through `HTTPOutboxHandler` to the reference
/// server, which checks the bytes against their `Content-Digest`.
///
/// Its limit is longer than other suites': twice 50 MB through a debug
/// build, sealed once, took 210–310 s inside loaded full runs on two cores.
@Suite("Large uploads over HTTP", .timeLimit(.minutes(10)))
struct LargeUploadTests {
    @Test("a 50 MB photo, plain and sealed: streamed from its file, applied once with exactly its bytes, the file deleted after")
    func fiftyMegabytePhoto() async throws {
        var middleware = IdempotencyMiddleware<ReferenceContext>.Configuration()
        middleware.maximumBodySize = 64 << 20
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore(), middleware: middleware)
        defer { Task { await server.stop() } }
        let photo = photoBytes(50 << 20, seed: 42)
        for key in [nil, Array(repeating: UInt8(3), count: 32)] {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-upload-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            var configuration = quietStoreConfiguration()
            if let key { try configuration.setEncryptionKey(key) }
            let store = try await LogOutboxStore.open(root: root, partition: "user", configuration: configuration)
            var http = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
            http.requestTimeout = .seconds(120)
            var dispatching = OutboxDispatcherConfiguration()
            dispatching.logger = quietLogger()
            dispatching.deliveryTimeout = .seconds(150)
            let dispatcher = OutboxDispatcher(
                store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: dispatching)
            let results = try await dispatcher.transaction { transaction in
                let album = try transaction.add(CreateUploadAlbum(title: "Holiday"))
                try transaction.add(UploadOriginal(album: album, bytes: photo))
            }
            let upload = try #require(results.last)
            guard case .enqueued(let entry) = upload else {
                Issue.record("not enqueued")
                return
            }
            #expect(entry.largePayload?.count == photo.count)
            let photos = server.ledger.photos
            let serverID = try await dispatcher.waitUntilDelivered(upload.id)
            #expect(serverID?.hasPrefix("ph-") == true)
            #expect(server.ledger.photos == photos + 1)
            #expect(server.ledger.rejected == 0, "the server saw another body than the one enqueued")
            #expect(server.ledger.appliedTwice.isEmpty)
            await dispatcher.stop()
            try await store.close()
            // The file went once the entry's end was durable (close waits for that).
            #expect(try payloadFiles(root).isEmpty)
        }
    }
}

/// A key placed in the JSON body cannot be put in a body that is streamed
/// from its file as enqueued: a typed error that says so, never a request
/// sent without the key or with another body.
@Suite("Large payloads and the key-in-body option", .timeLimit(.minutes(5)))
struct LargePayloadKeyPlacementTests {
    @Test("a file-backed body with the key in a JSON member: KeyInStreamedBody, the entry quarantined saying why")
    func keyInBodyRefusesFileBackedBodies() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-keybody-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var configuration = quietStoreConfiguration()
        configuration.largePayloadThreshold = 1024
        let store = try await LogOutboxStore.open(root: root, partition: "user", configuration: configuration)
        let json = Array(("{\"caption\":\"" + String(repeating: "x", count: 4000) + "\"}").utf8)
        let request = OutboxEnqueueRequest(type: "upload", method: "POST", endpoint: "/uploads", payload: json)
        guard case .enqueued(let entry) = try await store.enqueue(request) else {
            Issue.record("not enqueued")
            return
        }
        #expect(entry.largePayload != nil)
        var http = HTTPOutboxHandler.Configuration(baseURL: URL(string: "http://127.0.0.1:9")!)
        http.idempotencyKeyPlacement = .jsonBodyMember("idempotency_key")
        let handler = HTTPOutboxHandler(configuration: http)
        let delivery = OutboxDelivery(entry: entry, endpoint: entry.endpoint, payload: entry.payload, attempt: 1)
        #expect(throws: HTTPOutboxHandler.KeyInStreamedBody.self) { _ = try handler.request(for: delivery, token: nil) }
        guard case .permanent(let reason, _) = try await handler.deliver(delivery) else {
            Issue.record("not refused as permanent")
            return
        }
        #expect(reason.contains("payload file"), "\(reason)")
        try await store.close()
    }
}
