import Foundation
import Outbox

struct CreateAlbum: OutboxAction, Encodable {
    static let type = "create_album"
    let title: String
    var method: String { "POST" }
    var endpoint: String { "/albums" }
}

struct AddPhoto: OutboxAction, Encodable {
    static let type = "add_photo"
    let album: OutboxEntry.ID            // encoded as "local:<id>", sent as the album's server id
    let caption: String
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/photos" }
}

let store = InMemoryOutboxStore(partition: "user-42")
let server = ClosureOutboxHandler { delivery in
    print("\(delivery.method) \(delivery.endpoint) \(String(decoding: delivery.payload, as: UTF8.self))")
    return .delivered(serverID: delivery.endpoint == "/albums" ? "alb-1" : "ph-\(delivery.id.description.prefix(4))")
}
let dispatcher = OutboxDispatcher(store: store, handlers: [:], fallback: server)

// All or nothing, in one write: the album and its photos. A photo refers to the album
// by its local id, which also makes it wait for the album's delivery.
let results = try await dispatcher.transaction { transaction in
    let album = try transaction.add(CreateAlbum(title: "Trip"))
    try transaction.add(AddPhoto(album: album, caption: "Beach"))
    try transaction.add(AddPhoto(album: album, caption: "Sunset"))
}
for result in results { _ = try await dispatcher.waitUntilDelivered(result.id) }
await dispatcher.stop()
