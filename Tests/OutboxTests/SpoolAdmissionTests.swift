import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// What enters a queue through a spool is admitted as a direct enqueue
/// would be: its id is no longer "fresh" once spooled, its values are
/// checked, its size is judged by the owner's limits, and an entry the
/// owner cannot take is set aside and reported — never a failed store,
/// never a lost write, never a trap.
@Suite("Spool admission")
struct SpoolAdmissionTests {
    static let root: FilePath = "/data/root"

    @Test("an id spooled by this process is not admitted early after a reopen: the same write enqueued again is a duplicate")
    func spooledIDIsNotFresh() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        _ = try await StoreReopenTests.populated(disk)
        let configuration = StoreReopenTests.configuration(disk)
        let owner = try await LogOutboxStore.open(root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        // Minted here, spooled (the owner holds the queue), moved in and delivered.
        let write = request(OutboxEntry.ID(), payload: "pay 10")
        let spooled = try await LogOutboxStore.enqueue(
            [write], root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        guard case .spooled = spooled else {
            Issue.record("not spooled: \(spooled)")
            return
        }
        #expect(try await owner.ingestSpools().ingested == 1)
        try await owner.deliver(write.id, serverID: "srv-pay")
        try await owner.close()

        // Reopened from its checkpoint, still loading: the same write again.
        let (held, release) = StoreReopenTests.holdingTheLoad(disk)
        let reopened = try await LogOutboxStore.open(
            root: Self.root, partition: StoreReopenTests.partition, configuration: StoreReopenTests.configuration(held))
        #expect(reopened.core.loadsInBackground)
        async let again = reopened.enqueue(write)
        release.signal()
        #expect(try await again == .duplicate(write.id, status: .succeeded))
        #expect(try await reopened.entry(write.id) == nil, "the delivered write is pending again")
        try await reopened.close()
    }

    // The limit guards a hang only: alone this takes a second, but in the
    // whole parallel run a test waits minutes for the two-thread pool.
    @Test("writes spooled for the next open, whose app keys need the whole queue, begin its load from the open: moved in exactly, no hang", .timeLimit(.minutes(10)))
    func spooledKeysBeginTheLoad() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        _ = try await StoreReopenTests.populated(disk)  // "pay-1" pending
        let configuration = StoreReopenTests.configuration(disk)
        let owner = try await LogOutboxStore.open(root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        // Spooled while the owner holds the queue, and left for the next open.
        let fresh = SpoolTests.request("pay 20", key: "pay-20")
        let again = SpoolTests.request("pay 1 again", key: "pay-1")
        let spooled = try await LogOutboxStore.enqueue(
            [fresh, again], root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        guard case .spooled = spooled else {
            Issue.record("not spooled: \(spooled)")
            return
        }
        try await owner.close()

        // The open moves them in before it returns, and an app key is
        // judged against the whole queue: the open begins the load for it.
        let reopened = try await LogOutboxStore.open(root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        #expect(reopened.core.loadsInBackground)
        #expect(reopened.spoolReportAtOpen.ingested == 1)
        #expect(reopened.spoolReportAtOpen.duplicates == 1)
        #expect(try await reopened.entry(fresh.id) != nil)
        #expect(try await reopened.entry(again.id) == nil, "a second holder of pay-1 was admitted")
        try await reopened.close()
    }

    // MARK: Limits: the owner's, not the writer's

    static func spooling(
        _ disk: SimulatedFileSystem, writerRecordSize: Int, indexEvery: Int? = nil
    ) -> OutboxStoreConfiguration {
        var writer = SpoolTests.configuration(disk)
        writer.log.maximumRecordSize = writerRecordSize
        writer.largePayloadThreshold = nil
        if let indexEvery { writer.log.indexCheckpointInterval = indexEvery }
        return writer
    }

    /// The owner's configuration for ``spoolAnOversizedEntry(owner:writer:)``:
    /// a 1 MiB record limit, and payloads from `largePayloadThreshold` bytes
    /// up kept in files (nil: none).
    static func owner(_ disk: SimulatedFileSystem, largePayloadThreshold: Int?) -> OutboxStoreConfiguration {
        var owner = SpoolTests.configuration(disk)
        owner.log.maximumRecordSize = 1 << 20
        owner.largePayloadThreshold = largePayloadThreshold
        return owner
    }

    /// The owner holds the queue; a writer with a larger record limit spools
    /// a small entry, a 2 MiB one and another small one.
    static func spoolAnOversizedEntry(
        owner: OutboxStoreConfiguration, writer: OutboxStoreConfiguration
    ) async throws -> (LogOutboxStore, [OutboxEnqueueRequest]) {
        let store = try await SpoolTests.open(owner)
        let requests = [
            SpoolTests.request("before"), SpoolTests.request(String(repeating: "x", count: 2 << 20)),
            SpoolTests.request("after"),
        ]
        let result = try await LogOutboxStore.enqueue(requests, root: SpoolTests.root, partition: "alice", configuration: writer)
        guard case .spooled = result else { throw OutboxError(.invalidArgument, "not spooled: \(result)") }
        return (store, requests)
    }

    @Test("a spooled entry over the owner's record limit is set aside and reported; the rest moves in and the store stays usable", arguments: [nil, 4096])
    func oversizedEntryIsSetAside(indexEvery: Int?) async throws {
        let disk = SimulatedFileSystem()
        let owner = Self.owner(disk, largePayloadThreshold: nil)
        let (store, requests) = try await Self.spoolAnOversizedEntry(
            owner: owner, writer: Self.spooling(disk, writerRecordSize: 4 << 20, indexEvery: indexEvery))
        if indexEvery != nil {
            // The spool's log has an index checkpoint: its reopen trusts it.
            #expect(disk.allFiles().contains { $0.string.contains("/spool+") && $0.lastComponent?.string == "INDEX" })
        }
        let report = try await store.ingestSpools()
        #expect(report.ingested == 2, "\(report)")
        #expect(report.setAside == 1, "\(report)")
        let problem = try #require(report.problems.first, "\(report)")
        #expect(problem.kind == .setAside && problem.error.code == .tooLarge, "\(report)")
        #expect(problem.path.string.contains("/refused/"), "\(report)")
        // Kept as the writer wrote it, where the report says.
        #expect((disk.contents(of: problem.path)?.count ?? 0) > 2 << 20)
        #expect(try await store.entry(requests[0].id) != nil)
        #expect(try await store.entry(requests[2].id) != nil)
        #expect(try await store.entry(requests[1].id) == nil)
        // Usable: it takes a write, and the next look and the next open find nothing to do.
        guard case .enqueued = try await store.enqueue(SpoolTests.request("later")) else {
            Issue.record("the store refused a write after setting an entry aside")
            return
        }
        #expect(try await store.ingestSpools() == OutboxSpoolReport())
        try await store.close()
        let reopened = try await SpoolTests.open(owner)
        #expect(reopened.spoolReportAtOpen == OutboxSpoolReport())
        #expect(try await reopened.summary().unsent == 3)
        try await reopened.close()
    }

    @Test("a spooled payload above the owner's large-payload threshold moves into a payload file, as a direct enqueue's would")
    func largeSpooledPayloadGoesToAFile() async throws {
        let disk = SimulatedFileSystem()
        let owner = Self.owner(disk, largePayloadThreshold: 64 << 10)
        let (store, requests) = try await Self.spoolAnOversizedEntry(
            owner: owner, writer: Self.spooling(disk, writerRecordSize: 4 << 20))
        let report = try await store.ingestSpools()
        #expect(report.ingested == 3 && report.problems.isEmpty, "\(report)")
        let moved = try #require(try await store.entry(requests[1].id))
        #expect(moved.largePayload != nil)
        #expect(try await moved.largePayload?.bytes() == requests[1].payload)
        try await store.close()
    }

    @Test("a writer refuses a spooled entry over its own record limit with tooLarge, whatever the payload threshold says")
    func writerChecksItsRecordLimit() async throws {
        let disk = SimulatedFileSystem()
        let owner = try await SpoolTests.open(SpoolTests.configuration(disk))
        var writer = SpoolTests.configuration(disk)
        writer.log.maximumRecordSize = 1 << 20
        writer.largePayloadThreshold = 64 << 10
        await expectOutboxError(.tooLarge) {
            try await LogOutboxStore.enqueue(
                [SpoolTests.request(String(repeating: "y", count: (1 << 20) - 64))], root: SpoolTests.root, partition: "alice",
                configuration: writer)
        }
        #expect(try await owner.ingestSpools() == OutboxSpoolReport())
        try await owner.close()
    }

    // MARK: Values: checked as a direct enqueue's

    @Test("a spooled body with a creation date no enqueue accepts is set aside, not trusted")
    func spooledBodyOutOfRange() async throws {
        let disk = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(disk)
        let owner = try await SpoolTests.open(configuration)
        let format = RecordFormat(partition: "alice", key: nil)
        var bodies: [PreparedBody] = []
        for (text, createdAt) in [("before", Date().milliseconds), ("forged", Int64.max), ("after", Date().milliseconds)] {
            let request = SpoolTests.request(text)
            var body = try StoreCore.prepareBody(
                request, partition: "alice", configuration: configuration, now: Date().milliseconds,
                prepare: { body throws(OutboxError) in try LogBackend.prepare(body, format: format) }
            ).body
            body.createdAt = createdAt
            bodies.append(try LogBackend.prepare(body, format: format))
        }
        _ = try await SpoolWriter.write(
            bodies, format: format, spools: SpoolLayout.directory(ofQueue: owner.log.directory), configuration: configuration)
        let report = try await owner.ingestSpools()
        #expect(report.ingested == 2 && report.setAside == 1, "\(report)")
        #expect(report.problems.first?.error.code == .corruptEntry, "\(report)")
        #expect(try await owner.entry(bodies[1].body.id) == nil)
        try await owner.close()
    }

    @Test("names in the spools' directory that are not spools are left alone, however they are spelled")
    func strayNamesInSpools() async throws {
        let disk = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(disk)
        let owner = try await SpoolTests.open(configuration)
        let spools = SpoolLayout.directory(ofQueue: owner.log.directory)
        _ = try disk.createDirectoryWithParents(spools)
        let names = [
            "spool+" + String(repeating: "0", count: 30) + "é", "spool+" + String(repeating: "0", count: 30) + "é.lock",
            "spool+" + String(repeating: "A", count: 32), "spool+", "spool+zz" + String(repeating: "0", count: 30),
        ]
        for name in names { try disk.createDirectory(spools.appending(name)) }
        #expect(try await owner.ingestSpools() == OutboxSpoolReport())
        try await owner.close()
        let reopened = try await SpoolTests.open(configuration)
        #expect(reopened.spoolReportAtOpen == OutboxSpoolReport())
        for name in names { #expect((try? disk.itemKind(at: spools.appending(name))) == .directory, "\(name) was touched") }
        try await reopened.close()
    }
}
