import Crypto
import Foundation
import OutboxLog
import SystemPackage
import Testing

@testable import Outbox

/// Issue 15, item 2: queue directories named by a keyed hash, listing with
/// the key, one key per root, and the move of queues from before issue 15.
@Suite("Partition directories")
struct PartitionDirectoryTests {
    static func sealed(_ key: SymmetricKey) -> OutboxStoreConfiguration {
        var configuration = quietConfiguration()
        configuration.encryptionKey = key
        return configuration
    }

    static func queueDirectories(_ root: TemporaryRoot) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.path.string + "/partitions").sorted()
    }

    @Test("listing: without a key the plain queues, with the key the queues sealed under it, with another key none")
    func listingNeedsTheKey() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        for user in ["alice@example.com", "bob"] {
            try await LogOutboxStore.open(root: root.path, partition: user, configuration: Self.sealed(key)).close()
        }
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: key) == ["alice@example.com", "bob"])
        #expect(LogOutboxStore.partitions(root: root.path) == [])
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: SymmetricKey(size: .bits256)) == [])
        #expect(try Self.queueDirectories(root).allSatisfy { $0.hasPrefix("outbox+") && $0.count == 7 + 32 })

        // A purge without the key cannot find the queue: it says so instead of deleting nothing quietly.
        await expectOutboxError(.keyRequired) { try await LogOutboxStore.purge(root: root.path, partition: "bob") }
        try await LogOutboxStore.purge(root: root.path, partition: "bob", encryptionKey: key)
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: key) == ["alice@example.com"])
    }

    @Test("an unencrypted root names its queues with its own random salt (0600): two roots, two names for one user")
    func saltPerRoot() async throws {
        let first = TemporaryRoot()
        let second = TemporaryRoot()
        for root in [first, second] {
            try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration()).close()
        }
        #expect(try Self.queueDirectories(first) != Self.queueDirectories(second))
        let salt = try FileManager.default.attributesOfItem(atPath: first.path.string + "/SALT")
        #expect((salt[.posixPermissions] as? Int) == 0o600)
        #expect((salt[.size] as? Int) == 32)
        #expect(LogOutboxStore.partitions(root: first.path) == ["alice"])
    }

    @Test("one root, one key: a plain queue is refused beside sealed ones, a new key that opens none is refused")
    func oneKeyPerRoot() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: Self.sealed(key)).close()
        await expectOutboxError(.keyRequired) {
            try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        }
        await expectOutboxError(.wrongKey) {
            try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: Self.sealed(SymmetricKey(size: .bits256)))
        }
        #expect(try Self.queueDirectories(root).count == 1)
        // The right key still opens it, and adds users.
        try await LogOutboxStore.open(root: root.path, partition: "bob", configuration: Self.sealed(key)).close()
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: key) == ["alice", "bob"])

        // An app whose users each have their own key says so.
        let carolKey = SymmetricKey(size: .bits256)
        var own = Self.sealed(carolKey)
        own.oneKeyPerRoot = false
        try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: own).close()
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: carolKey) == ["carol"])
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: key) == ["alice", "bob"])
    }

    @Test("a plain queue opened with a key for the first time is sealed: entries kept, nothing readable left")
    func sealingAPlainQueue() async throws {
        let root = TemporaryRoot()
        let plain = try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: quietConfiguration())
        let id = try await plain.add(request(type: "TYPE-PLAIN-SECRET", payload: "PAYLOAD-PLAIN-SECRET", scope: "SCOPE-PLAIN-SECRET"))
        try await plain.close()
        let key = SymmetricKey(size: .bits256)
        let store = try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: Self.sealed(key))
        #expect(try await store.entry(id)?.payload == Array("PAYLOAD-PLAIN-SECRET".utf8))
        #expect(try await store.entry(id)?.scope == "SCOPE-PLAIN-SECRET")
        try await store.close()
        let found = try DiskSearch.occurrences(
            of: ["TYPE", "PAYLOAD", "SCOPE", "carol"].map { ($0, Array(($0 == "carol" ? $0 : $0 + "-PLAIN-SECRET").utf8)) },
            under: root.path.string)
        #expect(found.isEmpty, "\(found)")
        #expect(try Self.queueDirectories(root).filter { $0.hasPrefix("outbox+") }.count == 1)
    }

    // MARK: Queues from before issue 15

    /// A queue as builds before issue 15 wrote it: `partitions/<escaped
    /// user>/`, plain keys, plain scheduling fields, the request sealed in
    /// place if `key` is given, and a completion.
    static func writeLegacyQueue(root: FilePath, partition: String, key: SymmetricKey?) async throws -> (OutboxEntryID, OutboxEntryID) {
        let directory = PartitionDirectory.legacyPath(root: root, partition: partition)
        var configuration = OutboxLog.Configuration()
        configuration.logger = quietConfiguration().log.logger
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        let sealer = key.map(PayloadSealer.init(key:))
        if let sealer { _ = try await log.put("K", try sealer.sealCanary(partition: partition), durability: .durable) }
        let pending = OutboxEntryID()
        let body = EntryBody(
            id: pending, sequence: 7, createdAt: 1_700_000_000_000, priority: 2, maxAttempts: 10, type: "LEGACY-TYPE",
            scope: "LEGACY-SCOPE", coalescingKey: nil, partition: partition, dependencies: [], idempotencyKey: "LEGACY-KEY",
            keySuppliedByApp: true, method: "POST", endpoint: "/legacy", headers: ["H": "LEGACY-HEADER"],
            payload: Array("LEGACY-PAYLOAD".utf8))
        let metadata = EntryMetadata(
            id: pending, sequence: 7, status: .pending, priority: 2, attempts: 1, maxAttempts: 10, scope: 0, type: 0,
            coalescing: 0, when: 1_700_000_000_000, createdAt: 1_700_000_000_000, storedBytes: 0)
        let key = LogKey([0x45] + pending.bytes)
        _ = try await log.append(
            [.value(key, try EntryCodec.encode(body, sealer: sealer)),
             .annotation(key, EntryCodec.encodeState(metadata, failure: FailureInfo(message: "LEGACY-ERROR", httpStatus: 503)))],
            durability: .durable)
        let delivered = OutboxEntryID()
        _ = try await log.put(
            LogKey([0x43] + delivered.bytes),
            EntryCodec.encodeCompletion(Completion(serverID: "LEGACY-SERVER-ID", syncedAt: 1_700_000_000_000)),
            durability: .durable)
        try await log.close()
        return (pending, delivered)
    }

    static let legacyStrings = ["LEGACY-TYPE", "LEGACY-SCOPE", "LEGACY-KEY", "LEGACY-HEADER", "LEGACY-PAYLOAD", "LEGACY-ERROR", "LEGACY-SERVER-ID"]

    @Test("a sealed queue from before issue 15 is sealed whole and moved to its keyed name on open", arguments: [false, true])
    func legacyQueueMoves(encrypted: Bool) async throws {
        let root = TemporaryRoot()
        let key: SymmetricKey? = encrypted ? SymmetricKey(size: .bits256) : nil
        let (pending, delivered) = try await Self.writeLegacyQueue(root: root.path, partition: "dave@example.com", key: key)
        #expect(LogOutboxStore.partitions(root: root.path) == ["dave@example.com"])
        var configuration = quietConfiguration()
        configuration.encryptionKey = key
        if encrypted {
            // A wrong key or none moves nothing.
            await expectOutboxError(.wrongKey) {
                try await LogOutboxStore.open(root: root.path, partition: "dave@example.com", configuration: Self.sealed(SymmetricKey(size: .bits256)))
            }
            await expectOutboxError(.keyRequired) {
                try await LogOutboxStore.open(root: root.path, partition: "dave@example.com", configuration: quietConfiguration())
            }
            #expect(try Self.queueDirectories(root).contains("dave%40example.com"))
        }
        let store = try await LogOutboxStore.open(root: root.path, partition: "dave@example.com", configuration: configuration)
        let entry = try #require(try await store.entry(pending))
        #expect(entry.payload == Array("LEGACY-PAYLOAD".utf8))
        #expect(entry.headers == ["H": "LEGACY-HEADER"])
        #expect(entry.lastError == "LEGACY-ERROR")
        #expect(entry.attempts == 1)
        #expect(entry.sequence == 7)
        #expect(try await store.completion(of: delivered)?.serverID == "LEGACY-SERVER-ID")
        let again = try await store.add(request(type: "again"))
        #expect(try await store.entry(again)?.sequence ?? 0 > 7)
        try await store.close()

        let directories = try Self.queueDirectories(root).filter { $0 != "SALT" }
        #expect(directories.count == 1 && directories[0].hasPrefix("outbox+"), "\(directories)")
        if encrypted {
            let found = try DiskSearch.occurrences(
                of: (Self.legacyStrings + ["dave"]).map { ($0, Array($0.utf8)) }, under: root.path.string)
            #expect(found.isEmpty, "\(found)")
            #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: key) == ["dave@example.com"])
        } else {
            #expect(LogOutboxStore.partitions(root: root.path) == ["dave@example.com"])
        }
    }

    @Test("a move cut after its commit: the old directory is deleted on the next open, nothing is doubled")
    func moveCutAfterCommit() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        _ = try await Self.writeLegacyQueue(root: root.path, partition: "erin", key: key)
        let legacy = root.path.string + "/partitions/erin"
        let copy = root.path.string + "/erin-before"
        try FileManager.default.copyItem(atPath: legacy, toPath: copy)
        try await LogOutboxStore.open(root: root.path, partition: "erin", configuration: Self.sealed(key)).close()
        // As if the process died between the rename and the deletion.
        try FileManager.default.moveItem(atPath: copy, toPath: legacy)
        let store = try await LogOutboxStore.open(root: root.path, partition: "erin", configuration: Self.sealed(key))
        #expect(try await store.summary().total == 1)
        try await store.close()
        #expect(!FileManager.default.fileExists(atPath: legacy))
    }

    @Test("a half-built copy left by a crash is thrown away and the move done again")
    func halfBuiltCopy() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        _ = try await Self.writeLegacyQueue(root: root.path, partition: "finn", key: key)
        let name = PartitionDirectory.name("finn", naming: RecordSealer(key: key).naming)
        let partial = root.path.string + "/partitions/" + name + PartitionRewrite.temporarySuffix
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: false)
        FileManager.default.createFile(atPath: partial + "/00000000000000000001.seg", contents: Data(repeating: 7, count: 100))
        let store = try await LogOutboxStore.open(root: root.path, partition: "finn", configuration: Self.sealed(key))
        #expect(try await store.summary().total == 1)
        try await store.close()
        #expect(try Self.queueDirectories(root) == [name])
    }
}
