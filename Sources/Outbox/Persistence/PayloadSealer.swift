import Crypto
import Foundation

/// The seal of stores written before issue 15: the sensitive part of an
/// entry (endpoint, headers, payload) sealed in place with AES-GCM under the
/// app's key, the partition and the entry id bound as associated data. Read
/// only, to move such stores to ``RecordFormat``'s whole-record seal; and
/// still the format of the key-check record (`K`), which every sealed queue
/// has.
package struct PayloadSealer: Sendable {
    let key: SymmetricKey

    package init(key: SymmetricKey) { self.key = key }

    func seal(_ plaintext: [UInt8], partition: String, id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
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

    func open(_ sealed: [UInt8], partition: String, id: OutboxEntryID) throws(OutboxError) -> [UInt8] {
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
