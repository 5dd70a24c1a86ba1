import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

@Suite("Entry ids and idempotency keys")
struct FastUUIDTests {
    @Test("ids are random version-4 UUIDs, spelled exactly as Foundation spells them")
    func versionAndText() {
        var seen = Set<UUID>()
        for _ in 0..<2_000 {  // crosses several refills of the random pool
            let uuid = FastUUID.random()
            #expect(seen.insert(uuid).inserted)
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4, "version 4")
            #expect(bytes[8] >> 6 == 0b10, "RFC variant")
            #expect(FastUUID.string(uuid) == uuid.uuidString)
            #expect(OutboxEntryID(uuid).description == uuid.uuidString)
        }
        let fixed = UUID(uuidString: "00FF10EF-ABCD-4123-8A0B-C0D0E0F00102")!
        #expect(FastUUID.string(fixed) == "00FF10EF-ABCD-4123-8A0B-C0D0E0F00102")
    }

    @Test("ids order like their text")
    func order() {
        let ids = (0..<200).map { _ in OutboxEntryID() }
        #expect(ids.sorted().map(\.description) == ids.map(\.description).sorted())
    }

    @Test("every enqueue mints a distinct idempotency key")
    func idempotencyKeys() async throws {
        let store = InMemoryOutboxStore()
        var keys = Set<String>()
        for _ in 0..<300 {
            let request = OutboxEnqueueRequest(
                id: OutboxEntryID(), type: "t", method: "POST", endpoint: "/x", payload: [], headers: [:])
            let entry = try #require(try await store.enqueue(request).newEntry, "not enqueued")
            #expect(UUID(uuidString: entry.idempotencyKey) != nil)
            keys.insert(entry.idempotencyKey)
        }
        #expect(keys.count == 300)
    }
}
