import Crypto
import Foundation
import OutboxLog
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// The sealed record format: what a damaged, tampered or moved record does.
@Suite("Sealed record format")
struct RecordFormatTests {
    let key = SymmetricKey(size: .bits256)
    var format: RecordFormat { RecordFormat(partition: "hana", key: key) }

    func plainBody(_ id: OutboxEntryID) throws -> [UInt8] {
        let body = EntryBody(
            id: id, sequence: 42, createdAt: 1, priority: 0, maxAttempts: 3, type: "t", scope: nil, coalescingKey: nil,
            partition: "hana", dependencies: [], idempotencyKey: "k", keySuppliedByApp: false, method: "POST",
            endpoint: "/e", headers: [:], payload: [1, 2, 3])
        return try EntryCodec.encode(body)
    }

    @Test("a sealed body opens under its key; its sequence stays outside the box, in the clear")
    func roundTrip() throws {
        let id = OutboxEntryID()
        let plain = try plainBody(id)
        let stored = try format.storedBody(plain, id: id)
        #expect(stored[0] == RecordFormat.sealedMarker)
        #expect(Array(stored[1..<9]) == Array(plain[18..<26]))
        #expect(try format.plainBody(stored, key: format.entryKey(id)) == plain)
        #expect(format.entryKey(id).bytes.dropFirst() != id.bytes[...])
    }

    @Test("a flipped bit in any sealed byte, a body under another entry's key, another queue or key: corruptEntry")
    func tampering() throws {
        let id = OutboxEntryID()
        let stored = try format.storedBody(try plainBody(id), id: id)
        for index in 9..<stored.count {
            var damaged = stored
            damaged[index] ^= 0x10
            #expect(throws: OutboxError.self) { try format.plainBody(damaged, key: format.entryKey(id)) }
        }
        let error = #expect(throws: OutboxError.self) { try format.plainBody(stored, key: format.entryKey(OutboxEntryID())) }
        #expect(error?.code == .corruptEntry)
        #expect(throws: OutboxError.self) {
            try RecordFormat(partition: "other", key: key).plainBody(stored, key: format.entryKey(id))
        }
        #expect(throws: OutboxError.self) {
            try RecordFormat(partition: "hana", key: SymmetricKey(size: .bits256)).plainBody(stored, key: format.entryKey(id))
        }
        // A state sealed for one entry does not open as another's, nor as a completion.
        let state = try format.storedState([1, 2, 3], key: format.entryKey(id))
        #expect(try format.plainState(state, key: format.entryKey(id)) == [1, 2, 3])
        #expect(throws: OutboxError.self) { try format.plainState(state, key: format.entryKey(OutboxEntryID())) }
        #expect(throws: OutboxError.self) { try format.plainCompletion(state, key: format.completionKey(id)) }
        let completion = try format.storedCompletion([9], id: id)
        #expect(try format.plainCompletion(completion, key: format.completionKey(id)) == (id, [9]))
    }
}
