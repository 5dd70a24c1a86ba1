import Crypto
import Foundation

/// The key-check record (`K`) of a sealed queue: a fixed text sealed with
/// AES-GCM under the app's key, the partition bound as associated data.
/// Written when the queue (or a spool of it) is created and checked at every
/// open, so a wrong key is refused before anything is read or written
/// (Docs/FORMAT.md).
struct KeyCheck: Sendable {
    let key: SymmetricKey

    init(key: SymmetricKey) { self.key = key }

    private func seal(_ plaintext: [UInt8], partition: String, id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(plaintext, using: key, authenticating: Self.associatedData(partition, id))
            guard let combined = box.combined else { throw OutboxError(.invalidArgument, "AES-GCM produced no output") }
            return Array(combined)
        } catch let error as OutboxError {
            throw error
        } catch {
            throw OutboxError(.invalidArgument, "cannot seal entry: \(error)", entry: id)
        }
    }

    private func open(_ sealed: [UInt8], partition: String, id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return Array(try AES.GCM.open(box, using: key, authenticating: Self.associatedData(partition, id)))
        } catch {
            throw OutboxError(.wrongKey, "the entry does not open with this key", entry: id)
        }
    }

    /// A value sealed at creation so a wrong key is caught at open, before
    /// anything is read or written.
    func sealCanary(partition: String) throws(OutboxError) -> [UInt8] {
        try seal(Array("swift-outbox key check".utf8), partition: partition, id: Self.canaryID)
    }

    func checkCanary(_ sealed: [UInt8], partition: String) -> Bool {
        (try? open(sealed, partition: partition, id: Self.canaryID)) == Array("swift-outbox key check".utf8)
    }

    static let canaryID = OutboxEntryID(bytes: [UInt8](repeating: 0, count: 16))

    private static func associatedData(_ partition: String, _ id: OutboxEntryID) -> Data {
        Data(Array(partition.utf8) + [0] + id.bytes)
    }
}
