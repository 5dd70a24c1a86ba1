import CLITestSupport
import Crypto
import Foundation
import Outbox
import SystemPackage
import Testing

/// Key rotation, and `outbox rekey` killed with SIGKILL at
/// each step of it.
@Suite("Key rotation")
struct RekeyTests {
    static func raw(_ key: SymmetricKey) -> Data { key.withUnsafeBytes { Data($0) } }

    /// A queue with pending, failed and delivered entries; returns the ids
    /// of the entries and of the delivered one's completion.
    static func fill(root: FilePath, key: SymmetricKey) async throws -> (entries: Set<OutboxEntry.ID>, delivered: OutboxEntry.ID) {
        let store = try await LogOutboxStore.open(root: root, partition: "gina", configuration: PartitionDirectoryTests.sealed(key))
        var ids: [OutboxEntry.ID] = []
        for index in 0..<40 { ids.append(try await store.add(request(payload: "entry \(index)", scope: "chat-\(index % 3)"))) }
        let failed = ids[0]  // the head of its scope
        _ = try await store.beginAttempt(failed, at: Date(), lease: .seconds(30))
        _ = try await store.recordFailure(failed, OutboxFailure(.transient, httpStatus: 503, message: "busy"), retryAt: Date())
        let delivered = try await store.add(request(payload: "delivered"))
        try await store.deliver(delivered, serverID: "srv-1")
        try await store.close()
        return (Set(ids), delivered)
    }

    /// What `key` opens: the entries' ids, or the error code.
    static func contents(root: FilePath, key: SymmetricKey) async -> Result<Set<OutboxEntry.ID>, OutboxError> {
        do {
            let store = try await LogOutboxStore.open(
                root: root, partition: "gina",
                configuration: { var c = PartitionDirectoryTests.sealed(key); c.log.createIfMissing = false; return c }())
            let ids = Set(try await store.entries(matching: .all).map(\.id))
            try await store.close()
            return .success(ids)
        } catch let error as OutboxError {
            return .failure(error)
        } catch {
            return .failure(OutboxError(.invalidArgument, "\(error)"))
        }
    }

    @Test("rekey: the new key opens everything (states and mappings too), the old key nothing, listing follows the key")
    func rotation() async throws {
        let root = TemporaryRoot()
        let old = SymmetricKey(size: .bits256)
        let new = SymmetricKey(size: .bits256)
        let (ids, delivered) = try await Self.fill(root: root.path, key: old)
        // A wrong old key names no directory: no queue of gina is sealed under it.
        await expectOutboxError(.notFound) {
            try await LogOutboxStore.rekey(root: root.path, partition: "gina", from: SymmetricKey(size: .bits256), to: new)
        }
        try await LogOutboxStore.rekey(root: root.path, partition: "gina", from: old, to: new, configuration: quietConfiguration())
        let store = try await LogOutboxStore.open(root: root.path, partition: "gina", configuration: PartitionDirectoryTests.sealed(new))
        #expect(Set(try await store.entries(matching: .all).map(\.id)) == ids)
        #expect(try await store.entries(matching: .all).contains { $0.lastFailure?.message == "busy" && $0.attempts == 1 })
        #expect(try await store.completion(of: delivered)?.serverID == "srv-1")
        try await store.close()
        guard case .failure(let error) = await Self.contents(root: root.path, key: old) else {
            Issue.record("the old key still opens a queue")
            return
        }
        #expect(error.code == .wrongKey)
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: new) == ["gina"])
        #expect(LogOutboxStore.partitions(root: root.path, encryptionKey: old) == [])
    }

    @Test("outbox rekey killed at each step: exactly one key opens the whole queue; a rerun finishes", arguments: RekeyStep.allCases)
    func killedDuringRotation(step: RekeyStep) async throws {
        let root = TemporaryRoot()
        let old = SymmetricKey(size: .bits256)
        let new = SymmetricKey(size: .bits256)
        let (ids, _) = try await Self.fill(root: root.path, key: old)
        let oldFile = root.path.string + "/../" + (root.path.lastComponent?.string ?? "") + ".old-key"
        let newFile = root.path.string + "/../" + (root.path.lastComponent?.string ?? "") + ".new-key"
        try Self.raw(old).write(to: URL(fileURLWithPath: oldFile))
        try Self.raw(new).write(to: URL(fileURLWithPath: newFile))
        defer {
            try? FileManager.default.removeItem(atPath: oldFile)
            try? FileManager.default.removeItem(atPath: newFile)
        }
        let arguments = ["rekey", root.path.string, "--user", "gina", "--key-file", oldFile, "--new-key-file", newFile]

        await #expect(throws: OutboxTool.KilledBySignal.self) {
            _ = try await OutboxTool.run(arguments + ["--kill-self-at", step.rawValue])
        }
        let committed = step == .committed || step == .oldDeleted
        let opensOld = await Self.contents(root: root.path, key: old)
        let opensNew = await Self.contents(root: root.path, key: new)
        switch (committed, opensOld, opensNew) {
        case (false, .success(let found), .failure(let error)):
            #expect(found == ids)
            #expect(error.code == .wrongKey)
        case (true, .failure(let error), .success(let found)):
            #expect(found == ids)
            #expect(error.code == .wrongKey)
        default:
            Issue.record("after a kill at \(step): old key \(opensOld), new key \(opensNew)")
        }

        let rerun = try await OutboxTool.run(arguments)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        guard case .success(let found) = await Self.contents(root: root.path, key: new) else {
            Issue.record("the new key does not open the queue after the rerun")
            return
        }
        #expect(found == ids)
        let queues = try FileManager.default.contentsOfDirectory(atPath: root.path.string + "/partitions")
        #expect(queues.count == 1, "\(queues)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root.path.string + "/partitions/" + queues[0])
        #expect(!leftovers.contains("PREVIOUS"), "\(leftovers)")
    }
}

/// The CLI on encrypted queues: `--key-file` on every command, `outbox rekey`'s refusals.
@Suite("outbox commands with --key-file")
struct EncryptedCommandTests {
    @Test("enqueue and list with the key; without it list exits 2 asking for it; a rekey from the wrong key exits 2 and changes nothing")
    func keyFile() async throws {
        let root = TemporaryRoot()
        let queue = root.path.string + "/queue"
        let key = root.path.string + "/key"
        let wrong = root.path.string + "/wrong"
        let new = root.path.string + "/new"
        for path in [key, wrong, new] {
            try Data(OutboxStoreConfiguration.newEncryptionKey()).write(to: URL(fileURLWithPath: path))
        }
        let enqueue = try await OutboxTool.run(["enqueue", queue, "--user", "ivy", "--count", "2", "--size", "8", "--key-file", key])
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        #expect(try await OutboxTool.run(["list", queue, "--user", "ivy", "--key-file", key]).stdoutLines.count == 2)
        let keyless = try await OutboxTool.run(["list", queue, "--user", "ivy"])
        #expect(keyless.status == 2 && keyless.stdout.isEmpty, "\(keyless.stderr)")
        #expect(keyless.stderr.contains("--key-file"), "\(keyless.stderr)")

        let refused = try await OutboxTool.run(["rekey", queue, "--user", "ivy", "--key-file", wrong, "--new-key-file", new])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderrLines.count == 1 && refused.stderr.hasPrefix("error: "), "\(refused.stderr)")
        #expect(try await OutboxTool.run(["list", queue, "--user", "ivy", "--key-file", key]).stdoutLines.count == 2)

        let short = root.path.string + "/short"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: short))
        let bad = try await OutboxTool.run(["list", queue, "--user", "ivy", "--key-file", short])
        #expect(bad.status == 64, "\(bad.stderr)")

        let rekey = try await OutboxTool.run(["rekey", queue, "--user", "ivy", "--key-file", key, "--new-key-file", new])
        #expect(rekey.status == 0, "\(rekey.stderr)")
        #expect(try await OutboxTool.run(["list", queue, "--user", "ivy", "--key-file", new]).stdoutLines.count == 2)
        #expect(try await OutboxTool.run(["list", queue, "--user", "ivy", "--key-file", key]).stdout.isEmpty)
    }
}
