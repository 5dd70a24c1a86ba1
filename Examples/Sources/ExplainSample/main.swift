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
    let album: OutboxEntry.ID   // sent as `local:<id>`, replaced by the album's server id
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/photos" }
    var dependencies: [OutboxEntry.ID] { [album] }
}

// A server that refuses the first album (a validation error: quarantined), then accepts everything.
actor API {
    var refusedOnce = false
    func answer(_ delivery: OutboxDelivery) -> OutboxOutcome {
        if delivery.entry.type == CreateAlbum.type, !refusedOnce {
            refusedOnce = true
            return .permanent(reason: "HTTP 422: title too long", httpStatus: 422)
        }
        return .delivered(serverID: "srv-\(delivery.entry.type)")
    }
}
let api = API()
let server = ClosureOutboxHandler { delivery in await api.answer(delivery) }
let store = InMemoryOutboxStore(partition: "user-42")
let dispatcher = OutboxDispatcher(
    store: store, handlers: [CreateAlbum.type: server, AddPhoto.type: server])

let album = try await dispatcher.enqueue(CreateAlbum(title: "Holidays"))
let photo = try await dispatcher.enqueue(AddPhoto(album: album.id))
_ = try await dispatcher.flush()

// The photo has not gone out. Why?
let why = try await dispatcher.explain(photo.id)
print("photo: \(why)")
if case .retryParent(let parent) = why.remedy {
    // The app fixed the album (or the server changed): retry it, and the photo follows.
    try await dispatcher.retry(parent)
    _ = try await dispatcher.flush()
}
print("photo: \(try await dispatcher.explain(photo.id))")
await dispatcher.stop()

