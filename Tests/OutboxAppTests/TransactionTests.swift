import Foundation
import Outbox
import Testing

struct CreateAlbum: OutboxAction, Encodable {
    static let type = "post"
    let title: String
    var method: String { "POST" }
    var endpoint: String { "/albums" }
}

struct AddPhoto: OutboxAction, Encodable {
    static let type = "post"
    let album: OutboxEntry.ID
    let caption: String
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/photos" }
}

/// Several writes all or
/// nothing, referring to one another by `local:` id carried as a plain
/// `OutboxEntryID` property.
@Suite("Transactions", .timeLimit(.minutes(5)))
struct TransactionTests {
    @Test("an album and its photos: one transaction, photos sent after the album with its server id in place of local:")
    func albumAndPhotos() async throws {
        let app = App()
        await app.server.setAnswer { delivery, _ in
            delivery.endpoint == "/albums" ? .delivered(serverID: "alb-7") : .delivered(serverID: "ph-\(delivery.id)")
        }
        var transaction = OutboxTransaction()
        let album = try transaction.add(CreateAlbum(title: "Trip"))
        let photo = try transaction.add(AddPhoto(album: album, caption: "Beach"))
        // The reference made the photo depend on the album: no hand-written dependency.
        #expect(transaction.requests[1].dependencies == [album])
        #expect(String(decoding: transaction.requests[1].payload, as: UTF8.self).contains(album.localReference))
        let results = try await app.dispatcher.enqueue(transaction)
        #expect(results.map(\.id) == [album, photo])
        _ = try await app.dispatcher.waitUntilDelivered(photo)
        let sent = try #require(await app.server.deliveries(of: photo).first)
        #expect(sent.endpoint == "/albums/alb-7/photos")
        let body = try JSONDecoder().decode([String: String].self, from: Data(sent.payload))
        #expect(body["album"] == "alb-7")
    }

    @Test("all or nothing: one refused write leaves the queue untouched and the store usable")
    func allOrNothing() async throws {
        for kind in ["memory", "log"] {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-tx-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let store: any OutboxStore = kind == "memory"
                ? InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
                : try await LogOutboxStore.open(root: root, partition: "user", configuration: quietStoreConfiguration())
            let dispatcher = OutboxDispatcher(store: store, handlers: [:])
            await dispatcher.pause()
            var transaction = OutboxTransaction()
            try transaction.add(CreateAlbum(title: "fine"))
            try transaction.add(Post(text: "waits for a stranger", after: [OutboxEntry.ID()]))
            await #expect(throws: OutboxError.self) { try await dispatcher.enqueue(transaction) }
            #expect(try await store.summary().total == 0)
            var bad = OutboxTransaction()
            try bad.add(CreateAlbum(title: "fine"))
            bad.add(OutboxEnqueueRequest(type: "post", method: "NOT A METHOD", endpoint: "/x"))
            await #expect(throws: OutboxError.self) { try await dispatcher.enqueue(bad) }
            #expect(try await store.summary().total == 0)
            // Still usable, and a transaction survives a reopen whole.
            let results = try await dispatcher.transaction { transaction in
                let album = try transaction.add(CreateAlbum(title: "kept"))
                try transaction.add(AddPhoto(album: album, caption: "kept too"))
            }
            #expect(results.count == 2)
            try await store.close()
            if kind == "log" {
                let reopened = try await LogOutboxStore.open(root: root, partition: "user", configuration: quietStoreConfiguration())
                #expect(try await reopened.summary().count(.pending) == 2)
                try await reopened.close()
            }
        }
    }

    @Test("an OutboxEntryID encodes as its local: reference and decodes from it or a bare UUID; nothing else")
    func entryIDCoding() throws {
        let id = OutboxEntry.ID()
        let encoded = String(decoding: try JSONEncoder().encode(["album": id]), as: UTF8.self)
        #expect(encoded == #"{"album":"\#(id.localReference)"}"#)
        #expect(try JSONDecoder().decode(OutboxEntry.ID.self, from: Data(#""\#(id.localReference)""#.utf8)) == id)
        #expect(try JSONDecoder().decode(OutboxEntry.ID.self, from: Data(#""\#(id)""#.utf8)) == id)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(OutboxEntry.ID.self, from: Data(#"{"uuid":"\#(id)"}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(OutboxEntry.ID.self, from: Data(#""local:nope""#.utf8)) }
    }
}
