import Crypto
import Foundation

extension OutboxEntry {
    /// The idempotency key an entry gets when the app supplies none: a
    /// function of the partition and the entry id, so enqueueing the same id
    /// again — after an error, a crash, a power loss, or once the store has
    /// forgotten the delivered entry — sends the same key, and the server
    /// answers the repeat from the response it stored the first time.
    ///
    /// It is the first 128 bits of SHA-256 over a domain label, the
    /// partition (length-prefixed) and the id's 16 bytes, spelled as a
    /// version-8 UUID (RFC 9562), so it reads like the random keys servers
    /// are used to.
    ///
    /// What it reveals to the server: nothing it can read back — neither
    /// the partition (often a user name) nor the local id can be recovered
    /// from it, and entries of two partitions never share a key, even with
    /// the same id. Anyone who knows both the partition and the id can
    /// compute it: ids minted by the store are random and never leave the
    /// device, but an app that derives its ids from guessable data should
    /// pass its own unguessable key (``OutboxEnqueueRequest/idempotencyKey``)
    /// unless its server scopes keys per authenticated user, as the
    /// Idempotency-Key draft asks servers to do.
    public static func derivedIdempotencyKey(partition: String, id: OutboxEntry.ID) -> String {
        // Hashed straight from each value's storage: no temporary arrays.
        var hash = SHA256()
        derivationLabel.withUnsafeBytes { hash.update(bufferPointer: $0) }
        withUnsafeBytes(of: UInt32(partition.utf8.count).bigEndian) { hash.update(bufferPointer: $0) }
        var partition = partition
        partition.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        withUnsafeBytes(of: id.uuid.uuid) { hash.update(bufferPointer: $0) }
        var key: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        hash.finalize().withUnsafeBytes { digest in
            withUnsafeMutableBytes(of: &key) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: digest[..<16])) }
        }
        key.6 = (key.6 & 0x0F) | 0x80  // version 8: custom (here, name-based with SHA-256)
        key.8 = (key.8 & 0x3F) | 0x80  // variant 10
        return FastUUID.string(UUID(uuid: key))
    }

    /// The domain label, NUL-terminated.
    private static let derivationLabel: [UInt8] = Array("swift-outbox idempotency key v1".utf8) + [0]
}
