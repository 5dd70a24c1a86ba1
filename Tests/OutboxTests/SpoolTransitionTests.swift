import Crypto
import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// Spools follow their queue through every move: sealing (a key given to a
/// plain queue), a re-key and a purge. A spooled write is moved in — sealed
/// on its way if the queue now is — or deleted with its queue; nothing
/// plain is left behind, nothing acknowledged is lost.
@Suite("Spools through seal, re-key and purge")
struct SpoolTransitionTests {
    static let root = SpoolTests.root
    static let secret = "spooled-secret-\(UUID().uuidString)"

    static func configuration(_ disk: SimulatedFileSystem, key: SymmetricKey? = nil) -> OutboxStoreConfiguration {
        var configuration = SpoolTests.configuration(disk)
        configuration.encryptionKey = key
        return configuration
    }

    /// Whether any file under the root holds `text` in the clear.
    static func readable(_ text: String, on disk: SimulatedFileSystem) -> [FilePath] {
        disk.allFiles().filter { (disk.contents(of: $0) ?? []).contains(Array(text.utf8)) }
    }

    /// The owner holds `partition`'s queue while a writer spools `secret`;
    /// then the owner closes. Returns the spooled request.
    static func spoolWhileHeld(_ disk: SimulatedFileSystem, key: SymmetricKey? = nil) async throws -> OutboxEnqueueRequest {
        let owner = try await LogOutboxStore.open(root: root, partition: "alice", configuration: configuration(disk, key: key))
        _ = try await owner.enqueue(SpoolTests.request("held"))
        let spooled = SpoolTests.request(secret)
        let result = try await LogOutboxStore.enqueue(
            [spooled], root: root, partition: "alice", configuration: configuration(disk, key: key))
        guard case .spooled = result else { throw OutboxError(.invalidArgument, "not spooled: \(result)") }
        try await owner.close()
        return spooled
    }

    static func spoolFiles(_ disk: SimulatedFileSystem) -> [FilePath] {
        disk.allFiles().filter { $0.string.contains("/spool+") }
    }

    @Test("sealing a queue moves in what was spooled for it plain, sealed, and leaves nothing plain behind")
    func sealing() async throws {
        let disk = SimulatedFileSystem()
        let spooled = try await Self.spoolWhileHeld(disk)
        let key = SymmetricKey(size: .bits256)
        let sealed = try await SpoolTests.open(Self.configuration(disk, key: key))
        #expect(sealed.spoolReportAtOpen.ingested == 1, "\(sealed.spoolReportAtOpen)")
        #expect(try await sealed.entry(spooled.id)?.payload == spooled.payload)
        #expect(try await sealed.summary().unsent == 2)
        try await sealed.close()
        #expect(Self.readable(Self.secret, on: disk).isEmpty, "plain on disk: \(Self.readable(Self.secret, on: disk))")
        #expect(Self.spoolFiles(disk).isEmpty, "\(Self.spoolFiles(disk))")
    }

    @Test("a spool written under the plain name while the queue was being sealed is moved in at the next look")
    func spooledDuringTheSeal() async throws {
        let disk = SimulatedFileSystem()
        _ = try await Self.spoolWhileHeld(disk)
        let key = SymmetricKey(size: .bits256)
        let sealed = try await SpoolTests.open(Self.configuration(disk, key: key))
        // A plain writer that found the plain queue held by the seal: its spool lands under the plain name.
        let plainName = try #require(
            PartitionDirectory.naming(root: Self.root, key: nil, fileSystem: disk, create: false).map {
                PartitionDirectory.name("alice", naming: $0)
            })
        let late = SpoolTests.request("late-\(Self.secret)")
        let format = RecordFormat(partition: "alice", key: nil)
        let body = try StoreCore.admit(
            late, partition: "alice", configuration: Self.configuration(disk), now: Date().milliseconds,
            prepare: { body throws(OutboxError) in try LogBackend.prepare(body, format: format) })
        _ = try await SpoolWriter.write(
            [body], format: format, spools: SpoolLayout.directory(root: Self.root, queueName: plainName),
            configuration: Self.configuration(disk))
        let report = try await sealed.ingestSpools()
        #expect(report.ingested == 1, "\(report)")
        #expect(try await sealed.entry(late.id)?.payload == late.payload)
        try await sealed.close()
        #expect(Self.readable(Self.secret, on: disk).isEmpty, "plain on disk: \(Self.readable(Self.secret, on: disk))")
    }

    @Test("a re-key moves in what was spooled under the old key, and nothing of the old key's stays")
    func rekey() async throws {
        let disk = SimulatedFileSystem()
        let old = SymmetricKey(size: .bits256)
        let new = SymmetricKey(size: .bits256)
        let spooled = try await Self.spoolWhileHeld(disk, key: old)
        try await LogOutboxStore.rekey(root: Self.root, partition: "alice", from: old, to: new, configuration: Self.configuration(disk))
        #expect(Self.spoolFiles(disk).isEmpty, "\(Self.spoolFiles(disk))")
        let store = try await SpoolTests.open(Self.configuration(disk, key: new))
        #expect(try await store.entry(spooled.id)?.payload == spooled.payload)
        #expect(try await store.summary().unsent == 2)
        try await store.close()
    }

    @Test("set-aside records follow their queue through sealing, sealed, and are deleted by its purge")
    func setAsideRecordsFollow() async throws {
        let disk = SimulatedFileSystem()
        let owner = SpoolAdmissionTests.owner(disk, largePayloadThreshold: nil)
        let (store, _) = try await SpoolAdmissionTests.spoolAnOversizedEntry(
            owner: owner, writer: SpoolAdmissionTests.spooling(disk, writerRecordSize: 4 << 20))
        #expect(try await store.ingestSpools().setAside == 1)
        // And one that was already damage (it does not verify): evidence, copied sealed too.
        let refused = store.directory.appending(SetAsideRecords.directoryName)
        let damaged = refused.appending(String(repeating: "0", count: 32) + "-7")
        let descriptor = try disk.openFile(damaged, mode: .createNew)
        try disk.writeFully(descriptor, Array("OBXASIDE damaged \(Self.secret)".utf8), at: 0)
        try disk.close(descriptor)
        try await store.close()
        let key = SymmetricKey(size: .bits256)
        var sealing = Self.configuration(disk, key: key)
        sealing.log.maximumRecordSize = 1 << 20
        let sealed = try await SpoolTests.open(sealing)
        #expect(try await sealed.setAsideRecords().count == 2)
        try await sealed.close()
        let kept = disk.allFiles().filter { $0.string.contains("/refused/") }
        #expect(kept.count == 2)
        #expect(Self.readable(Self.secret, on: disk).isEmpty, "plain on disk: \(Self.readable(Self.secret, on: disk))")
        // Sealed: not one run of the payload's bytes is readable.
        #expect(Self.readable(String(repeating: "x", count: 64), on: disk).isEmpty)
        try await LogOutboxStore.purge(root: Self.root, partition: "alice", configuration: sealing)
        #expect(disk.allFiles().filter { $0.string.contains("/refused/") }.isEmpty)
    }

    @Test("a purge with the key deletes what was spooled under the queue's plain name too")
    func purgeTakesPlainNameSpools() async throws {
        let disk = SimulatedFileSystem()
        _ = try await Self.spoolWhileHeld(disk)
        let key = SymmetricKey(size: .bits256)
        // Sealed, but a writer's plain spool is still busy at the open: it stays.
        let sealed = try await SpoolTests.open(Self.configuration(disk, key: key))
        try await sealed.close()
        let plainName = try #require(
            PartitionDirectory.naming(root: Self.root, key: nil, fileSystem: disk, create: false).map {
                PartitionDirectory.name("alice", naming: $0)
            })
        let format = RecordFormat(partition: "alice", key: nil)
        let body = try StoreCore.admit(
            SpoolTests.request(Self.secret), partition: "alice", configuration: Self.configuration(disk), now: Date().milliseconds,
            prepare: { body throws(OutboxError) in try LogBackend.prepare(body, format: format) })
        _ = try await SpoolWriter.write(
            [body], format: format, spools: SpoolLayout.directory(root: Self.root, queueName: plainName),
            configuration: Self.configuration(disk))
        try await LogOutboxStore.purge(root: Self.root, partition: "alice", encryptionKey: key, fileSystem: disk)
        #expect(Self.spoolFiles(disk).isEmpty, "\(Self.spoolFiles(disk))")
        #expect(Self.readable(Self.secret, on: disk).isEmpty)
    }
}
