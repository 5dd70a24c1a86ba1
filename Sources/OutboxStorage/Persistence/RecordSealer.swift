import Crypto
import Foundation
import OutboxModel

/// Seals whole records with AES-GCM under the app's key, and names what the
/// store writes with a keyed hash, so that with encryption on nothing the
/// app or the server wrote — not even the user's name or an entry's id —
/// is readable in a file or a path.
///
/// Each sealed record authenticates, as associated data, what it is (body,
/// state, completion), the partition it belongs to and the log key it is
/// stored under: a record copied to another key, another kind or another
/// user's queue fails to open.
///
/// Two keys are derived from the app's key with HKDF-SHA256, each for one
/// job: the sealing key (AES-GCM) and the naming key (HMAC-SHA256, for log
/// keys and the partition's directory name). The same key is never used by
/// two algorithms.
package struct RecordSealer: Sendable {
    /// What a sealed record is: part of the associated data.
    package enum Purpose: UInt8, Sendable {
        case body = 1
        case state = 2
        case completion = 3
        case partitionName = 4
        /// The store checkpoint's body and key check (`SCHEDULE`).
        case checkpoint = 5
        /// A chunk of a payload file (``PayloadFileCipher``).
        case payloadChunk = 6
        /// A spooled record the queue set aside (``SetAsideRecords``).
        case setAside = 7
        /// The queue's snapshot (`SNAPSHOT`: ``OutboxQueueSnapshot``).
        case snapshot = 8
    }

    /// The app's key as given: what older stores sealed their sensitive
    /// part and key check with.
    let appKey: SymmetricKey
    private let sealingKey: SymmetricKey
    let naming: KeyedNaming

    init(key: SymmetricKey) {
        appKey = key
        sealingKey = Self.derive(key, "swift-outbox record sealing v1")
        naming = KeyedNaming(key: Self.derive(key, "swift-outbox naming v1"))
    }

    private static func derive(_ key: SymmetricKey, _ info: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Data(info.utf8), outputByteCount: 32)
    }

    /// The AES-GCM combined form (12-byte nonce, ciphertext, 16-byte tag)
    /// of `plaintext`, bound to `purpose`, `partition` and `binding` (the
    /// record's log key).
    func seal(
        _ plaintext: [UInt8], _ purpose: Purpose, partition: String, binding: [UInt8]
    ) throws(OutboxError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(
                plaintext, using: sealingKey,
                authenticating: Self.associatedData(purpose, partition, binding))
            guard let combined = box.combined else { throw OutboxError(.invalidArgument, "AES-GCM produced no output") }
            return Array(combined)
        } catch let error as OutboxError {
            throw error
        } catch {
            throw OutboxError(.invalidArgument, "cannot seal a record: \(error)")
        }
    }

    /// The plaintext of a sealed record; `.wrongKey` if it does not open with
    /// this key or was moved from where it was sealed.
    package func open(
        _ sealed: some Collection<UInt8>, _ purpose: Purpose, partition: String, binding: [UInt8]
    ) throws(OutboxError) -> [UInt8] {
        do {
            let box = try AES.GCM.SealedBox(combined: Data(sealed))
            return Array(
                try AES.GCM.open(box, using: sealingKey, authenticating: Self.associatedData(purpose, partition, binding)))
        } catch {
            throw OutboxError(.wrongKey, "a record of the queue does not open with this key")
        }
    }

    /// Bytes AES-GCM adds to a plaintext: nonce and tag.
    static let overhead = 12 + 16

    private static func associatedData(_ purpose: Purpose, _ partition: String, _ binding: [UInt8]) -> Data {
        var data = Data("swift-outbox sealed record v1".utf8)
        data.append(purpose.rawValue)
        withUnsafeBytes(of: UInt32(partition.utf8.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: partition.utf8)
        data.append(contentsOf: binding)
        return data
    }
}

/// A keyed hash (HMAC-SHA256) that names things on disk without revealing
/// them: with the app's key when encryption is on, with the root's random
/// salt when it is off. Whoever has the files but not the key (or, for an
/// unencrypted root, who does not guess the name) cannot tell what a name
/// stands for.
struct KeyedNaming: Sendable {
    let key: SymmetricKey

    /// The first `count` bytes of HMAC-SHA256(key, domain · 0 · bytes).
    func digest(_ domain: String, _ bytes: some Sequence<UInt8>, count: Int = 16) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Array(domain.utf8) + [0])
        hmac.update(data: Array(bytes))
        return Array(Array(hmac.finalize()).prefix(count))
    }
}
