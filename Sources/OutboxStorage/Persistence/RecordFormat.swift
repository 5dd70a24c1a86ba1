import Crypto
import OutboxLog
import OutboxModel

/// How a store's records look in its log: their keys, and their values
/// around ``EntryCodec``'s plain encodings.
///
/// **Plain** (no encryption key): keys are `E`/`C` and the entry's 16-byte
/// id; values are the plain encodings.
///
/// **Sealed** (an encryption key): keys are `E`/`C` and 16 bytes of
/// HMAC-SHA256 of the id under the naming key, so an app-chosen id is not
/// readable either; every value is `0xA5` and an AES-GCM box of the plain
/// encoding (``RecordSealer``), except that a body keeps its u64 sequence
/// number outside the box, right after the marker, because the sequence is
/// assigned under the store's lock after the body was sealed outside it. A
/// completion's box holds the entry's id before the plain completion: its key
/// no longer tells it. Only the sequence, the record kind, the lengths and
/// the log's own framing are in the clear (Docs/SECURITY.md).
package struct RecordFormat: Sendable {
    static let entryPrefix: UInt8 = 0x45  // "E": body (value) and state (annotation)
    static let completionPrefix: UInt8 = 0x43  // "C": the completion
    static let canaryKey: LogKey = "K"  // the encryption key check
    /// The first byte of every sealed value: no plain encoding starts with it
    /// (they start with their version, 1 or 2).
    static let sealedMarker: UInt8 = 0xA5
    /// Where the sequence sits in a plain body (after version, flags and id).
    static let plainSequenceOffset = 18

    package let partition: String
    package let sealer: RecordSealer?

    /// Plain, or sealed under `key`.
    package init(partition: String, key: SymmetricKey?) {
        self.partition = partition
        sealer = key.map(RecordSealer.init(key:))
    }

    package var isSealed: Bool { sealer != nil }

    // MARK: Keys

    package func entryKey(_ id: OutboxEntryID) -> LogKey { key(Self.entryPrefix, id) }
    package func completionKey(_ id: OutboxEntryID) -> LogKey { key(Self.completionPrefix, id) }

    private func key(_ prefix: UInt8, _ id: OutboxEntryID) -> LogKey {
        guard let sealer else {
            // Built on the stack: 17 bytes fit a key inline, no allocation.
            var bytes = (prefix, id.uuid.uuid)
            return withUnsafeBytes(of: &bytes) { LogKey($0) }
        }
        return LogKey([prefix] + sealer.naming.digest("swift-outbox entry key", id.bytes))
    }

    // MARK: Bodies

    /// Where the sequence sits in a stored body: written in under the lock
    /// (``LogBackend``'s body write).
    var sequenceOffset: Int { isSealed ? 1 : Self.plainSequenceOffset }

    /// The stored form of a body's plain encoding.
    func storedBody(_ plain: [UInt8], id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
        guard let sealer else { return plain }
        let sequence = plain[Self.plainSequenceOffset..<(Self.plainSequenceOffset + 8)]
        return [Self.sealedMarker] + sequence
            + (try sealer.seal(plain, .body, partition: partition, binding: entryKey(id).bytes))
    }

    /// The plain encoding of a stored body, its sequence patched in from the
    /// stored form; checked to belong under `key`.
    package func plainBody(_ stored: [UInt8], key: LogKey) throws(OutboxError) -> [UInt8] {
        guard let sealer else { return stored }
        guard stored.count > 9, stored[0] == Self.sealedMarker else {
            throw OutboxError(.corruptEntry, "an entry body of an encrypted queue is not sealed")
        }
        var plain = try Self.authenticated { () throws(OutboxError) in
            try sealer.open(stored[9...], .body, partition: partition, binding: key.bytes)
        }
        guard plain.count >= Self.plainSequenceOffset + 8,
            entryKey(OutboxEntryID(bytes: Array(plain[2..<18]))) == key
        else { throw OutboxError(.corruptEntry, "a sealed entry body is not the one its key names") }
        plain.replaceSubrange(Self.plainSequenceOffset..<(Self.plainSequenceOffset + 8), with: stored[1..<9])
        return plain
    }

    // MARK: States and completions

    /// The stored form of a state (the annotation of the body under `key`).
    func storedState(_ plain: [UInt8], key: LogKey) throws(OutboxError) -> [UInt8] {
        guard let sealer else { return plain }
        return [Self.sealedMarker] + (try sealer.seal(plain, .state, partition: partition, binding: key.bytes))
    }

    func plainState(_ stored: [UInt8], key: LogKey) throws(OutboxError) -> [UInt8] {
        guard let sealer else { return stored }
        let box = try Self.unmarked(stored, "state")
        return try Self.authenticated { () throws(OutboxError) in
            try sealer.open(box, .state, partition: partition, binding: key.bytes)
        }
    }

    /// The stored form of the completion of `id`.
    func storedCompletion(_ plain: [UInt8], id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
        guard let sealer else { return plain }
        return [Self.sealedMarker]
            + (try sealer.seal(id.bytes + plain, .completion, partition: partition, binding: completionKey(id).bytes))
    }

    /// The entry a stored completion belongs to, and its plain encoding.
    func plainCompletion(_ stored: [UInt8], key: LogKey) throws(OutboxError) -> (OutboxEntryID, [UInt8]) {
        guard let sealer else { return (OutboxEntryID(bytes: Array(key.bytes.dropFirst())), stored) }
        let box = try Self.unmarked(stored, "completion")
        let opened = try Self.authenticated { () throws(OutboxError) in
            try sealer.open(box, .completion, partition: partition, binding: key.bytes)
        }
        guard opened.count >= 16, completionKey(OutboxEntryID(bytes: Array(opened[..<16]))) == key else {
            throw OutboxError(.corruptEntry, "a sealed completion is not the one its key names")
        }
        return (OutboxEntryID(bytes: Array(opened[..<16])), Array(opened[16...]))
    }

    /// The key check at open proved the key: a record that then fails to
    /// open was damaged or tampered with (its CRC can be forged, its tag
    /// cannot), or moved from another key, kind or queue.
    private static func authenticated(_ open: () throws(OutboxError) -> [UInt8]) throws(OutboxError) -> [UInt8] {
        do { return try open() } catch {
            throw OutboxError(.corruptEntry, "a sealed record fails authentication: damaged, tampered with, or moved")
        }
    }

    private static func unmarked(_ stored: [UInt8], _ what: String) throws(OutboxError) -> ArraySlice<UInt8> {
        guard stored.first == sealedMarker else {
            throw OutboxError(.corruptEntry, "a \(what) record of an encrypted queue is not sealed")
        }
        return stored.dropFirst()
    }
}
