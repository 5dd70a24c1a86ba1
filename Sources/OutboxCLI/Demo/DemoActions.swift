import Foundation
import Outbox

/// The app's writes, as outbox actions.

struct CreateAlbum: OutboxAction, Encodable {
    static let type = "create_album"
    let title: String
    var method: String { "POST" }
    var endpoint: String { "/albums" }
}

/// A photo of an album created offline: `album` is sent as the album's
/// `local:` reference (that is how an `OutboxEntryID` encodes), which the
/// dispatcher replaces with the album's server id once it has one.
struct AddPhoto: OutboxAction, Encodable {
    static let type = "add_photo"
    let album: OutboxEntry.ID
    let caption: String
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/photos" }
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
