import Foundation
import Outbox
import Testing

// This file imports neither SystemPackage nor Crypto: an app opens, purges
// and lists its queues by String or file URL, and gives its encryption key
// as raw bytes.

@Suite("Store paths and keys without SystemPackage or Crypto")
struct StorePathAndKeyTests {
    let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-paths-\(UUID().uuidString)")

    @Test("a file URL root: open, reopen as a String, list, purge")
    func urlAndStringRoots() async throws {
        defer { try? FileManager.default.removeItem(at: temporary) }
        let root = temporary.appendingPathComponent("Application Support").appendingPathComponent("outbox")
        let store = try await LogOutboxStore.open(root: root, partition: "alice", configuration: quietConfiguration())
        let id = try await store.add(request(payload: "by URL"))
        try await store.close()

        let reopened = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        #expect(try await reopened.entry(id)?.payload == Array("by URL".utf8))
        try await reopened.close()

        #expect(try LogOutboxStore.partitions(root: root) == ["alice"])
        #expect(LogOutboxStore.partitions(root: root.path) == ["alice"])
        try await LogOutboxStore.purge(root: root, partition: "alice")
        #expect(LogOutboxStore.partitions(root: root.path) == [])
        let again = try await LogOutboxStore.open(root: root.path, partition: "bob", configuration: quietConfiguration())
        try await again.close()
        try await LogOutboxStore.purge(root: root.path, partition: "bob")
        #expect(try LogOutboxStore.partitions(root: root) == [])
    }

    @Test("a URL that is not a file URL, or an empty root, is an invalid argument")
    func refusedRoots() async throws {
        let web = URL(string: "https://example.com/outbox")!
        await expectOutboxError(.invalidArgument) { try await LogOutboxStore.open(root: web, partition: "alice") }
        await expectOutboxError(.invalidArgument) { try await LogOutboxStore.purge(root: web, partition: "alice") }
        #expect(throws: OutboxError.self) { try LogOutboxStore.partitions(root: web) }
        await expectOutboxError(.invalidArgument) { try await LogOutboxStore.open(root: "", partition: "alice") }
        #expect(LogOutboxStore.partitions(root: "") == [])
    }

    @Test("a raw 32-byte key seals the queue: the same bytes reopen it, other bytes and no key are refused")
    func rawKey() async throws {
        defer { try? FileManager.default.removeItem(at: temporary) }
        let key = OutboxStoreConfiguration.newEncryptionKey()
        #expect(key.count == 32)
        #expect(key != OutboxStoreConfiguration.newEncryptionKey())
        var sealed = quietConfiguration()
        try sealed.setEncryptionKey(key)
        let store = try await LogOutboxStore.open(root: temporary, partition: "carol", configuration: sealed)
        let id = try await store.add(request(payload: "secret"))
        try await store.close()

        var other = quietConfiguration()
        try other.setEncryptionKey(OutboxStoreConfiguration.newEncryptionKey())
        await expectOutboxError(.wrongKey) { try await LogOutboxStore.open(root: temporary, partition: "carol", configuration: other) }
        await expectOutboxError(.keyRequired) {
            try await LogOutboxStore.open(root: temporary, partition: "carol", configuration: quietConfiguration())
        }
        var same = quietConfiguration()
        try same.setEncryptionKey(Data(key))
        let reopened = try await LogOutboxStore.open(root: temporary, partition: "carol", configuration: same)
        #expect(try await reopened.entry(id)?.payload == Array("secret".utf8))
        try await reopened.close()
    }

    @Test("a raw key of a length AES does not take is refused and changes nothing", arguments: [0, 15, 31, 33, 64])
    func rawKeyLength(count: Int) throws {
        var configuration = quietConfiguration()
        let error = #expect(throws: OutboxError.self) {
            try configuration.setEncryptionKey([UInt8](repeating: 1, count: count))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("not \(count)") == true)
        #expect(configuration.encryptionKey == nil)
        for accepted in [16, 24, 32] { try configuration.setEncryptionKey([UInt8](repeating: 1, count: accepted)) }
    }
}
