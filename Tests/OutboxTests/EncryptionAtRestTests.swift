import Crypto
import Foundation
import Outbox
import SystemPackage
import Testing

/// With encryption on, nothing the app or the server wrote
/// is readable anywhere under the root — not in a file's bytes, not in a
/// path — and everything reads back with the key.
@Suite("Encryption at rest")
struct EncryptionAtRestTests {
    /// A distinctive string per field; none may appear on disk.
    static let partition = "zed.partition-secret@example.com"
    static let secrets: [String: String] = [
        "type": "TYPE-SECRET-71d2",
        "scope": "SCOPE-SECRET-83a1",
        "coalescingKey": "COALESCE-SECRET-9b0c",
        "idempotencyKey": "APPKEY-SECRET-5e6f",
        "endpoint": "/ENDPOINT-SECRET-1a2b",
        "headerName": "X-Header-Name-Secret-4c4c",
        "headerValue": "HEADER-VALUE-SECRET-7d7d",
        "payload": "PAYLOAD-SECRET-0e0e",
        "lastError": "LAST-ERROR-SECRET-3f3f",
        "serverID": "SERVER-ID-SECRET-6a6a",
        "partition": "partition-secret",
    ]
    /// An app-chosen id a dependency names: neither its text nor its bytes
    /// may appear either.
    static let parentID = OutboxEntry.ID(UUID(uuidString: "5EC2E75E-C2E7-4AAA-8BBB-5EC2E75E5EC2")!)

    static func sealedConfiguration(_ key: SymmetricKey) -> OutboxStoreConfiguration {
        var configuration = quietConfiguration()
        configuration.encryptionKey = key
        configuration.succeededRetention = .seconds(3600)
        return configuration
    }

    /// Writes an entry with a secret in every field, a child depending on an
    /// app-chosen id, a failure with a secret message and a success with a
    /// secret server id; returns the ids of (failed, child, succeeded).
    static func writeSecrets(root: FilePath, key: SymmetricKey) async throws -> [OutboxEntry.ID] {
        let store = try await LogOutboxStore.open(root: root, partition: partition, configuration: sealedConfiguration(key))
        let s = secrets
        let failed = try await store.add(
            OutboxEnqueueRequest(
                idempotencyKey: s["idempotencyKey"]!, type: s["type"]!, method: "POST", endpoint: s["endpoint"]!,
                payload: Array(s["payload"]!.utf8), headers: [s["headerName"]!: s["headerValue"]!], scope: s["scope"]!,
                priority: 3, coalescingKey: s["coalescingKey"]!))
        let parent = try await store.add(
            OutboxEnqueueRequest(id: parentID, type: s["type"]!, method: "POST", endpoint: s["endpoint"]!))
        let child = try await store.add(
            OutboxEnqueueRequest(type: s["type"]!, method: "PUT", endpoint: s["endpoint"]!, dependencies: [parent]))
        let now = Date()
        _ = try await store.beginAttempt(failed, at: now, lease: .seconds(30))
        _ = try await store.recordFailure(failed, OutboxFailure(.transient, httpStatus: 503, message: s["lastError"]!), retryAt: now.addingTimeInterval(60))
        try await store.deliver(parent, serverID: s["serverID"]!, at: now)
        try await store.close()
        return [failed, child, parent]
    }

    @Test("distinctive strings in every field, the partition name, an app-chosen id: none appears in any file or path")
    func nothingReadableOnDisk() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        let ids = try await Self.writeSecrets(root: root.path, key: key)

        var needles: [(String, [UInt8])] = Self.secrets.map { ($0.key, Array($0.value.utf8)) }
        needles.append(("parent id text", Array(Self.parentID.description.utf8)))
        needles.append(("parent id bytes", withUnsafeBytes(of: Self.parentID.uuid.uuid) { Array($0) }))
        let found = try DiskSearch.occurrences(of: needles, under: root.path.string)
        #expect(found.isEmpty, "readable on disk: \(found)")

        // And everything reads back with the key.
        let store = try await LogOutboxStore.open(
            root: root.path, partition: Self.partition, configuration: Self.sealedConfiguration(key))
        let failed = try #require(try await store.entry(ids[0]))
        #expect(failed.type == Self.secrets["type"])
        #expect(failed.scope == Self.secrets["scope"])
        #expect(failed.coalescingKey == Self.secrets["coalescingKey"])
        #expect(failed.idempotencyKey == Self.secrets["idempotencyKey"])
        #expect(failed.endpoint == Self.secrets["endpoint"])
        #expect(failed.headers == [Self.secrets["headerName"]!: Self.secrets["headerValue"]!])
        #expect(failed.payload == Array(Self.secrets["payload"]!.utf8))
        #expect(failed.lastFailure == OutboxFailure(.transient, httpStatus: 503, message: Self.secrets["lastError"]))
        #expect(failed.priority == 3)
        #expect(try await store.entry(ids[1])?.dependencies == [Self.parentID])
        #expect(try await store.completion(of: Self.parentID)?.serverID == Self.secrets["serverID"])
        #expect(try await store.entry(ids[2])?.status == .succeeded)
        // The app-supplied key still finds its entry.
        let duplicate = try await store.enqueue(
            OutboxEnqueueRequest(idempotencyKey: Self.secrets["idempotencyKey"]!, type: "other", method: "POST", endpoint: "/x"))
        #expect(duplicate.id == ids[0])
        try await store.close()
    }
}

/// Searches every file's bytes and every path under a directory.
enum DiskSearch {
    /// `(what, where)` for each needle found in a path or a file.
    static func occurrences(of needles: [(String, [UInt8])], under root: String) throws -> [String] {
        var found: [String] = []
        let enumerator = try #require(FileManager.default.enumerator(atPath: root))
        while let relative = enumerator.nextObject() as? String {
            let path = root + "/" + relative
            for (what, needle) in needles where contains(Array(relative.utf8), needle) {
                found.append("\(what) in the path \(relative)")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            for (what, needle) in needles where contains(bytes, needle) {
                found.append("\(what) in the file \(relative)")
            }
        }
        return found
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return Data(haystack).range(of: Data(needle)) != nil
    }
}
