import Crypto
import Foundation
import OutboxModel

/// The key-check record (`K`) of a sealed queue: a fixed text sealed with
/// AES-GCM under the app's key, the partition bound as associated data.
/// Written when the queue (or a spool of it) is created and checked at every
/// open, so a wrong key is refused before anything is read or written
/// (Docs/STORE-FORMAT.md).
struct KeyCheck: Sendable {
    let key: SymmetricKey

    init(key: SymmetricKey) { self.key = key }

    /// What the record seals, and what it must open to.
    private static let text = Array("swift-outbox key check".utf8)

    /// The record's value for a new queue (or spool) of `partition`: a
    /// fresh nonce each time.
    func sealCanary(partition: String) throws(OutboxError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(Self.text, using: key, authenticating: Self.associatedData(partition))
            guard let combined = box.combined else { throw OutboxError(.invalidArgument, "AES-GCM produced no output") }
            return Array(combined)
        } catch let error as OutboxError {
            throw error
        } catch {
            throw OutboxError(.invalidArgument, "cannot seal the key check: \(error)")
        }
    }

    /// Whether `sealed` is a key check of `partition` that opens under this key.
    func checkCanary(_ sealed: [UInt8], partition: String) -> Bool {
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let opened = try? AES.GCM.open(box, using: key, authenticating: Self.associatedData(partition))
        else { return false }
        return Array(opened) == Self.text
    }

    /// The associated data: the partition, a zero byte, and 16 zero bytes.
    private static func associatedData(_ partition: String) -> Data {
        Data(Array(partition.utf8) + [0] + [UInt8](repeating: 0, count: 16))
    }
}
