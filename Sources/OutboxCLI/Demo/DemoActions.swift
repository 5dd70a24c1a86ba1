import Foundation
import Outbox

/// The app's writes, as outbox actions.

struct CreateAlbum: OutboxAction, Encodable {
    static let type = "create_album"
    let title: String
    var method: String { "POST" }
    var endpoint: String { "/albums" }
}

struct AddPhoto: OutboxAction {
    static let type = "add_photo"
    let album: OutboxEntry.ID
    let caption: String
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/photos" }
    var dependencies: [OutboxEntry.ID] { [album] }
    var headers: [String: String] { ["Content-Type": "application/json"] }
    func payload() throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: ["album": album.localReference, "caption": caption], options: [.sortedKeys]))
    }
}

struct ToggleLike: OutboxAction, Encodable {
    static let type = "toggle_like"
    let post: String
    let liked: Bool
    var method: String { "PUT" }
    var endpoint: String { "/posts/\(post)/like" }
    var coalescingKey: String? { "like:\(post)" }
}

struct SendMessage: OutboxAction, Encodable {
    static let type = "send_message"
    let conversation: String
    let text: String
    var method: String { "POST" }
    var endpoint: String { "/messages" }
    var scope: String? { conversation }
}
