import Crypto
import Foundation
import OutboxLog

/// A key's identity in the store's log: 96 bits of HMAC-SHA256(store
/// secret, key).
///
/// Keys are chosen by clients. The log is keyed by this digest rather than
/// the key, so its index needs 13 bytes per key however long keys are (the
/// digest and a one-byte namespace, inline in a ``LogKey``), and a client
/// cannot choose keys that collide in it: without the store's secret (32
/// random bytes made when the store is created, kept in its directory with
/// mode 0600) the digests are unpredictable. Two different keys share a
/// digest with probability 2⁻⁹⁶ per pair; the store still compares the full
/// key whenever it reads a record, and refuses a key whose digest is taken
/// by another rather than confuse them.
struct KeyDigest: Hashable, Sendable {
    /// Bits 0–63.
    var hash: UInt64
    /// Bits 64–95.
    var check: UInt32

    /// Where a completed key's response is: namespace `s` and the digest.
    var settledKey: LogKey { logKey(namespace: KeyStoreRecord.settledNamespace) }
    /// Where a key's claim or unknown outcome is: namespace `u` and the digest.
    var unsettledKey: LogKey { logKey(namespace: KeyStoreRecord.unsettledNamespace) }

    private func logKey(namespace: UInt8) -> LogKey {
        var bytes: [UInt8] = [namespace]
        withUnsafeBytes(of: hash.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: check.littleEndian) { bytes.append(contentsOf: $0) }
        return LogKey(bytes)
    }
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
