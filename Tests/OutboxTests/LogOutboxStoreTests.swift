import Crypto
import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What only the durable store must do: survive crashes, keep users apart,
/// and keep data sealed.
@Suite("LogOutboxStore")
struct LogOutboxStoreTests {
    @Test("a process killed with an entry in flight: after restart it is pending with the attempt counted, same key")
    func killedInFlight() async throws {
        let root = TemporaryRoot()
        let rootPath = root.path.string
        let ids = (0..<3).map { _ in OutboxEntry.ID() }
        let idStrings = ids.map(\.description)
        await #expect(processExitsWith: .signal(SIGKILL)) { [rootPath = rootPath as String, idStrings = idStrings as [String]] in
            let store = try await LogOutboxStore.open(root: FilePath(rootPath), partition: "alice", configuration: quietConfiguration())
            for id in idStrings { try await store.add(request(OutboxEntry.ID(id)!)) }
            _ = try await store.beginAttempt(OutboxEntry.ID(idStrings[0])!, at: Date(), lease: .seconds(30))
            _ = try await store.beginAttempt(OutboxEntry.ID(idStrings[1])!, at: Date(), lease: .seconds(30))
            _ = try await store.recordFailure(OutboxEntry.ID(idStrings[1])!, OutboxFailure(.transient, httpStatus: 503, message: "503"), retryAt: Date())
            _ = try await store.beginAttempt(OutboxEntry.ID(idStrings[1])!, at: Date(), lease: .seconds(30))
            kill(getpid(), SIGKILL)
        }
        let store = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        let first = try #require(try await store.entry(ids[0]))
        #expect(first.status == .pending)
        #expect(first.attempts == 1)
        let second = try #require(try await store.entry(ids[1]))
        #expect(second.status == .pending)
        #expect(second.attempts == 2)
        #expect(try await store.entry(ids[2])?.attempts == 0)
        #expect(Set(try await store.dueIDs()) == Set(ids))
        // The restart's reset is itself durable.
        let key = first.idempotencyKey
        try await store.close()
        let again = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        #expect(try await again.entry(ids[0])?.idempotencyKey == key)
        #expect(try await again.entry(ids[0])?.status == .pending)
        try await again.close()
    }

    @Test("durable enqueues and outcomes survive a power loss; unsynced attempt marks may not, nothing else is lost")
    func powerLoss() async throws {
        for mode in PowerLossMode.allCases {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let configuration = quietConfiguration(on: disk)
            let store = try await LogOutboxStore.open(root: "/data/outbox", partition: "bob", configuration: configuration)
            var delivered: [OutboxEntry.ID] = []
            var pending: [OutboxEntry.ID] = []
            for i in 0..<30 {
                let id = try await store.add(request(payload: "entry \(i)"))
                if i % 3 == 0 {
                    try await store.deliver(id, serverID: "s\(i)")
                    delivered.append(id)
                } else {
                    pending.append(id)
                }
            }
            // An attempt mark is only `written`: it may or may not survive.
            _ = try await store.beginAttempt(pending[0], at: Date(), lease: .seconds(30))
            disk.simulatePowerLoss(mode, seed: 7)
            let reopened = try await LogOutboxStore.open(root: "/data/outbox", partition: "bob", configuration: configuration)
            for id in delivered {
                #expect(try await reopened.completion(of: id) != nil, "\(mode)")
                #expect(try await reopened.entry(id) == nil, "\(mode)")
            }
            for id in pending {
                let entry = try await reopened.entry(id)
                #expect(entry?.status == .pending, "\(mode)")
                #expect(entry?.payload.isEmpty == false)
            }
            try await reopened.close()
            withExtendedLifetime(store) {}
        }
    }

    @Test("a success mark not yet synced may be lost to a power loss: the entry is then resent with the same key")
    func unsyncedSuccess() async throws {
        for successDurability in [Durability.written, .durable] {
            let disk = SimulatedFileSystem(directories: ["/data"])
            var configuration = quietConfiguration(on: disk)
            configuration.successDurability = successDurability
            let store = try await LogOutboxStore.open(root: "/data/outbox", partition: "bob", configuration: configuration)
            let early = try await store.add(request(payload: "early"))
            let late = try await store.add(request(payload: "late"))
            let key = try #require(try await store.entry(late)?.idempotencyKey)
            try await store.deliver(early, serverID: "s-early")
            _ = try await store.add(request(payload: "after"))  // durable: syncs the success before it
            try await store.deliver(late, serverID: "s-late")  // nothing synced after this one
            disk.simulatePowerLoss(.dropUnsynced, seed: 1)
            let reopened = try await LogOutboxStore.open(root: "/data/outbox", partition: "bob", configuration: configuration)
            #expect(try await reopened.completion(of: early)?.serverID == "s-early")
            #expect(try await reopened.entry(early) == nil)
            if successDurability == .durable {
                #expect(try await reopened.completion(of: late)?.serverID == "s-late")
                #expect(try await reopened.entry(late) == nil)
            } else {
                // Lost, and harmless: pending again with the key it had.
                #expect(try await reopened.completion(of: late) == nil)
                let entry = try #require(try await reopened.entry(late))
                #expect(entry.status == .pending)
                #expect(entry.idempotencyKey == key)
            }
            try await reopened.close()
            withExtendedLifetime(store) {}
        }
    }

    @Test("a store opened for one user never sees another's entries; purge deletes only that user's files")
    func partitions() async throws {
        let root = TemporaryRoot()
        let alice = try await LogOutboxStore.open(root: root.path, partition: "alice@example.com", configuration: quietConfiguration())
        let bob = try await LogOutboxStore.open(root: root.path, partition: "../bob", configuration: quietConfiguration())
        let aliceEntry = try await alice.add(request(payload: "alice"))
        let bobEntry = try await bob.add(request(payload: "bob"))
        #expect(try await alice.entries(matching: .all).map(\.id) == [aliceEntry])
        #expect(try await bob.entries(matching: .all).map(\.id) == [bobEntry])
        #expect(try await alice.entry(bobEntry) == nil)
        #expect(LogOutboxStore.partitions(root: root.path) == ["../bob", "alice@example.com"])
        // Directory names are keyed hashes: no name reaches a path, none climbs out of the root.
        let directories = try FileManager.default.contentsOfDirectory(atPath: root.path.string + "/partitions")
        #expect(directories.count == 2 && directories.allSatisfy { $0.hasPrefix("outbox+") && !$0.contains("bob") }, "\(directories)")

        await expectOutboxError(.busy) { try await LogOutboxStore.purge(root: root.path, partition: "alice@example.com") }
        try await alice.close()
        try await LogOutboxStore.purge(root: root.path, partition: "alice@example.com")
        #expect(LogOutboxStore.partitions(root: root.path) == ["../bob"])
        #expect(try await bob.entry(bobEntry)?.payload == Array("bob".utf8))
        let fresh = try await LogOutboxStore.open(root: root.path, partition: "alice@example.com", configuration: quietConfiguration())
        #expect(try await fresh.summary().total == 0)
        try await fresh.close()
        try await bob.close()
    }

    @Test("encryption seals payload, endpoint and headers; a wrong or missing key is a typed error and destroys nothing")
    func encryption() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        var sealed = quietConfiguration()
        sealed.encryptionKey = key
        let store = try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: sealed)
        let secret = "card-4242-4242-secret"
        let headerSecret = "X-Card-Token-ab12cd34"
        let id = try await store.add(
            OutboxEnqueueRequest(
                type: "post", method: "POST", endpoint: "/payments/\(secret)", payload: Array(#"{"card":"\#(secret)"}"#.utf8),
                headers: ["X-Card-Token": headerSecret]))
        try await store.close()

        // Nothing readable on disk.
        let found = try DiskSearch.occurrences(
            of: [("secret", Array(secret.utf8)), ("header", Array(headerSecret.utf8)), ("user", Array("carol".utf8))],
            under: root.path.string)
        #expect(found.isEmpty, "\(found)")

        var wrong = quietConfiguration()
        wrong.encryptionKey = SymmetricKey(size: .bits256)
        await expectOutboxError(.wrongKey) { try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: wrong) }
        await expectOutboxError(.keyRequired) {
            try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: quietConfiguration())
        }

        let reopened = try await LogOutboxStore.open(root: root.path, partition: "carol", configuration: sealed)
        let entry = try #require(try await reopened.entry(id))
        #expect(entry.endpoint == "/payments/\(secret)")
        #expect(entry.payload == Array(#"{"card":"\#(secret)"}"#.utf8))
        #expect(entry.headers["X-Card-Token"] == headerSecret)
        try await reopened.close()
    }
}
