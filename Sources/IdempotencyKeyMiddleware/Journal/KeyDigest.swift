import Crypto
import Foundation

/// A key's identity in the journal's compact index: 96 bits of
/// HMAC-SHA256(store secret, key).
///
/// Keys are chosen by clients. The index is keyed by this digest rather than
/// the key, so it needs 12 bytes per key however long keys are, and a client
/// cannot choose keys that collide in it: without the store's secret (32
/// random bytes made when the store is created, kept in its directory with
/// mode 0600) the digests are unpredictable. Two different keys share a
/// digest with probability 2⁻⁹⁶ per pair; the store still compares the full
/// key whenever it reads a record, and refuses a key whose digest is taken
/// by another rather than confuse them.
struct KeyDigest: Hashable, Sendable {
    /// Bits 0–63: the dictionary key of the index.
    var hash: UInt64
    /// Bits 64–95: checked against the slot, to tell keys apart without a read.
    var check: UInt32
}

/// Computes ``KeyDigest``s with one store's secret.
struct KeyDigester: Sendable {
    private let secret: SymmetricKey

    init(secret: [UInt8]) {
        self.secret = SymmetricKey(data: secret)
    }

    func digest(_ key: String) -> KeyDigest {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(key.utf8), using: secret)
        return mac.withUnsafeBytes { raw in
            KeyDigest(hash: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), check: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        }
    }
}
