import Foundation

/// The local identifier of an outbox entry: a UUID minted on the device.
///
/// It names the entry in the store and, as ``localReference``
/// (`local:<UUID>`), stands for the server-side id of whatever the entry
/// creates until the server has answered: a child entry can use
/// `local:<parent id>` in its endpoint or JSON payload, and the dispatcher
/// replaces it with the parent's server id before sending the child.
///
/// In an `Encodable` action it encodes as its local reference, the string
/// `"local:<UUID>"`, so an action can carry the entry it refers to as a
/// plain property and the dispatcher replaces it with the server's id:
///
/// ```swift
/// struct AddPhoto: OutboxAction, Encodable {
///     static let type = "add_photo"
///     let album: OutboxEntry.ID       // sent as "local:…", then as the album's server id
///     let caption: String
///     var method: String { "POST" }
///     var endpoint: String { "/albums/\(album.localReference)/photos" }
///     var dependencies: [OutboxEntry.ID] { [album] }
/// }
/// ```
public struct OutboxEntryID: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let uuid: UUID

    /// A new random (version 4) id.
    ///
    /// A store reopened from its checkpoint admits an entry with an id minted
    /// here (and enqueued nowhere before) before it has finished loading,
    /// when nothing else about the entry needs the loaded queue — no
    /// app-supplied idempotency key, no coalescing key, no dependencies, no
    /// size limit configured (Docs/OUTBOX.md, "Reopening").
    public init() {
        self.uuid = FastUUID.random()
        FreshEntryIDs.minted(uuid)
    }

    /// The id with this UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses a UUID string or a `local:` reference.
    public init?(_ text: some StringProtocol) {
        var trimmed = String(text)
        if trimmed.hasPrefix(Self.localPrefix) { trimmed.removeFirst(Self.localPrefix.count) }
        guard let uuid = UUID(uuidString: trimmed) else { return nil }
        self.uuid = uuid
    }

    /// The prefix of local references.
    public static let localPrefix = "local:"

    /// `local:<UUID>`: how payloads and endpoints refer to what this entry
    /// creates before the server has given it an id.
    public var localReference: String { Self.localPrefix + description }

    /// Encodes as ``localReference``: `"local:<UUID>"`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(localReference)
    }

    /// Decodes a `local:` reference or a bare UUID string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = OutboxEntryID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not an outbox entry id or local: reference: \(text)")
        }
        self = id
    }

    /// The UUID's canonical upper-case text.
    public var description: String { FastUUID.string(uuid) }

    /// The order of the UUIDs' text (and of their bytes: the same order).
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    /// The 16 bytes of the UUID.
    package var bytes: [UInt8] {
        withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    // Inlinable: every record the store reads makes ids from byte slices, and
    // a generic function called from another module runs unspecialized (its
    // metadata looked up at run time, under a lock, per call).
    @inlinable
    package init(bytes: some Collection<UInt8>) {
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { target in
            var index = 0
            for byte in bytes.prefix(16) {
                target[index] = byte
                index += 1
            }
        }
        self.init(UUID(uuid: raw))
    }
}
