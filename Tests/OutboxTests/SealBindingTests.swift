import Crypto
import Foundation
import Testing

@testable import Outbox

/// Docs/OUTBOX.md promises that an encrypted entry's sealed part (endpoint,
/// headers, payload) is bound to its partition and entry id as associated
/// data: a blob copied onto another entry, or into another user's store
/// under the same app key, must fail to open (issue #21, item 7b).
@Suite("Seal binding")
struct SealBindingTests {
    let sealer = PayloadSealer(key: SymmetricKey(size: .bits256))

    func body(id: OutboxEntryID, partition: String, payload: String) -> EntryBody {
        let request = OutboxEnqueueRequest(
            id: id, type: "pay", method: "POST", endpoint: "/payments", payload: Array(payload.utf8),
            headers: ["Content-Type": "application/json"])
        let metadata = EntryMetadata(
            id: id, sequence: 1, status: .pending, priority: 0, attempts: 0, maxAttempts: 10, scope: 0, type: 0,
            coalescing: 0, when: 0, createdAt: 1_800_000_000_000, storedBytes: 0)
        return EntryBody(request: request, metadata: metadata, partition: partition)
    }

    /// `target`'s encoded body with its sealed part replaced by `source`'s:
    /// what copying the blob inside the log from one record to another makes.
    func splice(sealedPartOf source: [UInt8], into target: [UInt8]) throws -> [UInt8] {
        let sourceSealed = try EntryCodec.decodeHeader(source).sensitive
        let targetSealed = try EntryCodec.decodeHeader(target).sensitive
        let prefix = target.prefix(target.count - 4 - targetSealed.count)
        var length = UInt32(sourceSealed.count).littleEndian
        let lengthBytes = withUnsafeBytes(of: &length) { Array($0) }
        let spliced = Array(prefix) + lengthBytes + sourceSealed
        // The splice itself is sound: the header still decodes, with the copied blob.
        #expect(try EntryCodec.decodeHeader(spliced).sensitive == sourceSealed)
        return spliced
    }

    @Test("a sealed blob copied onto another entry of the same user fails to open; in place it opens")
    func anotherEntry() throws {
        let alice = try EntryCodec.encode(body(id: OutboxEntryID(), partition: "alice", payload: #"{"amount":5}"#), sealer: sealer)
        let other = try EntryCodec.encode(body(id: OutboxEntryID(), partition: "alice", payload: #"{"amount":900}"#), sealer: sealer)
        #expect(try EntryCodec.decode(try splice(sealedPartOf: alice, into: alice), sealer: sealer).payload == Array(#"{"amount":5}"#.utf8))
        #expect(throws: OutboxError.self) { try EntryCodec.decode(try splice(sealedPartOf: alice, into: other), sealer: sealer) }
        #expect(throws: OutboxError.self) { try EntryCodec.decode(try splice(sealedPartOf: other, into: alice), sealer: sealer) }
    }

    @Test("a sealed blob copied to another user (partition) under the same app key fails to open, even with the same entry id")
    func anotherUser() throws {
        let id = OutboxEntryID()
        let alice = try EntryCodec.encode(body(id: id, partition: "alice", payload: #"{"to":"alice"}"#), sealer: sealer)
        let bob = try EntryCodec.encode(body(id: id, partition: "bob", payload: #"{"to":"bob"}"#), sealer: sealer)
        do {
            _ = try EntryCodec.decode(try splice(sealedPartOf: alice, into: bob), sealer: sealer)
            Issue.record("alice's request opened as bob's")
        } catch let error as OutboxError {
            #expect(error.code == .wrongKey)
        }
    }
}
