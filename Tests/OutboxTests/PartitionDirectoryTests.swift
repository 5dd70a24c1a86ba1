import Crypto
import Foundation
import OutboxLog
import SystemPackage
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// Queue directories named by a keyed hash, listing with the key, one key
/// per root, and the sealing of a plain queue when a key is first given.
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

    // MARK: A seal cut by a crash

    /// A plain queue of `partition` holding one entry; returns its directory name.
    static func writePlainQueue(root: TemporaryRoot, partition: String) async throws -> String {
        let plain = try await LogOutboxStore.open(root: root.path, partition: partition, configuration: quietConfiguration())
        _ = try await plain.add(request(payload: "plain"))
        try await plain.close()
        return try #require(try queueDirectories(root).first { $0.hasPrefix(PartitionDirectory.prefix) })
    }

    @Test("a seal cut after its commit: the plain queue is deleted on the next open, nothing is doubled")
    func sealCutAfterCommit() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        let plainName = try await Self.writePlainQueue(root: root, partition: "erin")
        let plain = root.path.string + "/partitions/" + plainName
        let copy = root.path.string + "/erin-before"
        try FileManager.default.copyItem(atPath: plain, toPath: copy)
        try await LogOutboxStore.open(root: root.path, partition: "erin", configuration: Self.sealed(key)).close()
        // As if the process died between the rename and the deletion: the
        // plain queue still there, named in the sealed one's PREVIOUS file.
        try FileManager.default.moveItem(atPath: copy, toPath: plain)
        let sealedName = PartitionDirectory.name("erin", naming: RecordSealer(key: key).naming)
        let previous = root.path.string + "/partitions/" + sealedName + "/" + PartitionDirectory.previousFileName
        #expect(FileManager.default.createFile(atPath: previous, contents: Data(plainName.utf8)))
        let store = try await LogOutboxStore.open(root: root.path, partition: "erin", configuration: Self.sealed(key))
        #expect(try await store.summary().total == 1)
        try await store.close()
        #expect(!FileManager.default.fileExists(atPath: plain))
    }

    @Test("a half-built sealed copy left by a crash is thrown away and the seal done again")
    func halfBuiltCopy() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        _ = try await Self.writePlainQueue(root: root, partition: "finn")
        let name = PartitionDirectory.name("finn", naming: RecordSealer(key: key).naming)
        let partial = root.path.string + "/partitions/" + name + PartitionRewrite.temporarySuffix
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: partial + "/00000000000000000001.seg", contents: Data(repeating: 7, count: 100))
        let store = try await LogOutboxStore.open(root: root.path, partition: "finn", configuration: Self.sealed(key))
        #expect(try await store.summary().total == 1)
        try await store.close()
        #expect(try Self.queueDirectories(root) == [name])
    }
}
