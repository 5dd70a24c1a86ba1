import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Enqueue from another process: a queue held open elsewhere takes writes
/// through spools (Docs/OUTBOX.md, "Enqueue from another process"). The
/// "other process" is a second open on the same simulated file system,
/// whose locks are per file like POSIX record locks between processes.
@Suite("Spools")
struct SpoolTests {
    static let root: FilePath = "/app-group/outbox"

    static func configuration(_ fileSystem: any FileSystem, key: [UInt8]? = nil) -> OutboxStoreConfiguration {
        var configuration = quietConfiguration(on: fileSystem)
        if let key { try! configuration.setEncryptionKey(key) }
        return configuration
    }

    static func request(_ text: String, id: OutboxEntry.ID = OutboxEntry.ID(), dependencies: [OutboxEntry.ID] = [], key: String? = nil)
        -> OutboxEnqueueRequest
    {
        OutboxEnqueueRequest(
            id: id, idempotencyKey: key, type: "message", method: "POST", endpoint: "/messages",
            payload: Array(text.utf8), scope: "chat", dependencies: dependencies)
    }

    /// Opens the queue `alice` under ``root``: the owner, or a later open.
    static func open(_ configuration: OutboxStoreConfiguration) async throws(OutboxError) -> LogOutboxStore {
        try await LogOutboxStore.open(root: root, partition: "alice", configuration: configuration)
    }

    /// A spool writer for `alice` under ``root``: the public one, or one
    /// that hands a spool over every `entriesPerSpool` entries.
    static func spoolWriter(
        _ configuration: OutboxStoreConfiguration, entriesPerSpool: Int? = nil
    ) async throws(OutboxError) -> OutboxSpoolWriter {
        guard let entriesPerSpool else {
            return try await LogOutboxStore.spoolWriter(root: root, partition: "alice", configuration: configuration)
        }
        return try await LogOutboxStore.spoolWriter(
            root: root, partition: "alice", configuration: configuration, entriesPerSpool: entriesPerSpool)
    }

    /// Expects spool files on `fileSystem`, and none of `texts` readable in any of them.
    static func expectSpools(
        on fileSystem: SimulatedFileSystem, hiding texts: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let spoolFiles = fileSystem.allFiles().filter { $0.string.contains("/spool+") }
        #expect(!spoolFiles.isEmpty, sourceLocation: sourceLocation)
        for file in spoolFiles {
            let text = String(decoding: fileSystem.contents(of: file) ?? [], as: UTF8.self)
            for hidden in texts { #expect(!text.contains(hidden), "\(file)", sourceLocation: sourceLocation) }
        }
    }

    /// Enqueues into `alice` as another process would (directly, or
    /// through a spool while an owner holds the queue).
    static func enqueue(_ requests: [OutboxEnqueueRequest], _ configuration: OutboxStoreConfiguration) async throws(OutboxError)
        -> OutboxSharedEnqueueResult
    {
        try await LogOutboxStore.enqueue(requests, root: root, partition: "alice", configuration: configuration)
    }

    @Test("no owner: the writer opens the queue and writes directly")
    func directWhenFree() async throws {
        let fileSystem = SimulatedFileSystem()
        let result = try await Self.enqueue([Self.request("hi")], Self.configuration(fileSystem))
        #expect(result.path == .direct)
        let store = try await Self.open(Self.configuration(fileSystem))
        #expect(try await store.summary().unsent == 1)
        try await store.close()
    }

    @Test("owner holds the queue: the writer spools; the owner moves the entries in with their ids, keys and dependencies")
    func spooledWhileHeld() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        let parent = try #require(try await owner.enqueue(Self.request("parent")).newEntry)
        let first = Self.request("first", dependencies: [parent.id], key: "app-key-1")
        let second = Self.request("second", dependencies: [first.id])
        let result = try await Self.enqueue([first, second], configuration)
        guard case .spooled(let spooled) = result else { Issue.record("not spooled: \(result)"); return }
        #expect(spooled.map(\.id) == [first.id, second.id])
        #expect(spooled[0].idempotencyKey == "app-key-1")
        #expect(spooled[1].idempotencyKey == OutboxEntry.derivedIdempotencyKey(partition: "alice", id: second.id))
        #expect(try await owner.entry(first.id) == nil)

        let report = try await owner.ingestSpools()
        #expect(report.ingested == 2 && report.spoolsDeleted == 1 && report.problems.isEmpty)
        let moved = try #require(try await owner.entry(first.id))
        #expect(moved.idempotencyKey == "app-key-1" && moved.dependencies == [parent.id] && moved.payload == Array("first".utf8))
        #expect(try await owner.entry(second.id)?.dependencies == [first.id])
        #expect(try await owner.entry(second.id)?.idempotencyKey == spooled[1].idempotencyKey)
        // In order, after what the queue held.
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.id) == [parent.id, first.id, second.id])
        #expect(try await owner.ingestSpools() == OutboxSpoolReport())
        try await owner.close()
        #expect(try fileSystem.contentsOfDirectory(Self.root.appending("spools")).allSatisfy { name in
            (try? fileSystem.contentsOfDirectory(Self.root.appending("spools").appending(name)))?.contains { $0.hasPrefix("spool+") } == false
        })
    }

    @Test("a spool left behind is moved in by the next open; a spooled duplicate is dropped once")
    func nextOwnerIngests() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        let held = try #require(try await owner.enqueue(Self.request("held")).newEntry)
        // The same id spooled twice (a writer that retried), and one already in the queue.
        let again = Self.request("again")
        for _ in 0..<2 {
            _ = try await Self.enqueue([again], configuration)
        }
        _ = try await Self.enqueue([Self.request("held", id: held.id)], configuration)
        try await owner.close()

        let next = try await Self.open(configuration)
        #expect(next.spoolReportAtOpen.ingested == 1)
        #expect(next.spoolReportAtOpen.duplicates == 2)
        #expect(next.spoolReportAtOpen.spoolsDeleted == 3)
        #expect(try await next.entries(matching: OutboxFilter()).map(\.id) == [held.id, again.id])
        try await next.close()
    }

    @Test("a spooled entry whose dependency the queue does not know is recorded quarantined, with the reason")
    func unknownDependencyIsQuarantined() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        let orphan = Self.request("orphan", dependencies: [OutboxEntry.ID()])
        _ = try await Self.enqueue([orphan], configuration)
        let report = try await owner.ingestSpools()
        #expect(report.quarantined == 1)
        let entry = try #require(try await owner.entry(orphan.id))
        #expect(entry.status == .quarantined)
        #expect(entry.lastFailure?.dependency?.name == "unknownToQueue")
        try await owner.close()
    }

    @Test("a full queue leaves the spooled entries in their spool, in order, until there is room")
    func fullQueueKeepsTheSpool() async throws {
        let fileSystem = SimulatedFileSystem()
        var configuration = Self.configuration(fileSystem)
        configuration.maximumEntries = 1
        let owner = try await Self.open(configuration)
        let held = try #require(try await owner.enqueue(Self.request("held")).newEntry)
        let waiting = [Self.request("one"), Self.request("two")]
        _ = try await Self.enqueue(waiting, configuration)
        var report = try await owner.ingestSpools()
        #expect(report.ingested == 0 && report.left == 2 && report.spoolsDeleted == 0)
        _ = try await owner.discard(held.id)
        report = try await owner.ingestSpools()
        #expect(report.ingested == 1 && report.left == 1)
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.id) == [waiting[0].id])
        _ = try await owner.discard(waiting[0].id)
        report = try await owner.ingestSpools()
        #expect(report.ingested == 1 && report.spoolsDeleted == 1)
        try await owner.close()
    }

    @Test("encrypted: the spool is sealed under the queue's key; nothing the app wrote is readable in it")
    func encryptedSpool() async throws {
        let fileSystem = SimulatedFileSystem()
        let key = [UInt8](repeating: 7, count: 32)
        let configuration = Self.configuration(fileSystem, key: key)
        let owner = try await Self.open(configuration)
        let secret = Self.request("top-secret-text")
        _ = try await Self.enqueue([secret], configuration)
        Self.expectSpools(on: fileSystem, hiding: ["top-secret-text", "/messages"])
        #expect(try await owner.ingestSpools().ingested == 1)
        #expect(try await owner.entry(secret.id)?.payload == Array("top-secret-text".utf8))
        try await owner.close()
    }

    @Test("a spool still locked by its writer is left for a later look")
    func busySpoolIsSkipped() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        _ = try await Self.enqueue([Self.request("one")], configuration)
        let spools = try fileSystem.contentsOfDirectory(Self.root.appending("spools"))
        let spoolsDirectory = Self.root.appending("spools").appending(try #require(spools.first))
        let spool = try #require(try fileSystem.contentsOfDirectory(spoolsDirectory).first { $0.hasPrefix("spool+") })
        // A writer that still holds its spool.
        let writer = try await OutboxLog.open(at: spoolsDirectory.appending(spool), configuration: configuration.log)
        var report = try await owner.ingestSpools()
        #expect(report.spoolsBusy == 1 && report.ingested == 0)
        try await writer.close()
        report = try await owner.ingestSpools()
        #expect(report.ingested == 1 && report.spoolsDeleted == 1)
        try await owner.close()
    }

    @Test("a bad request is refused before anything is written, on the spooled path too")
    func badRequestWritesNothing() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        var bad = Self.request("x")
        bad.endpoint = "no-slash"
        await #expect(throws: OutboxError.self) {
            _ = try await Self.enqueue([Self.request("ok"), bad], configuration)
        }
        #expect((try? fileSystem.contentsOfDirectory(Self.root.appending("spools"))) == nil)
        try await owner.close()
    }

    @Test("purge at logout deletes the spools with the queue; a purge refused because the queue is open deletes no spool")
    func purgeTakesTheSpools() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        _ = try await Self.enqueue([Self.request("one")], configuration)
        let spoolFiles = { fileSystem.allFiles().filter { $0.string.contains("/spool+") } }
        #expect(!spoolFiles().isEmpty)
        await #expect(throws: OutboxError.self) {
            try await LogOutboxStore.purge(root: Self.root, partition: "alice", configuration: configuration)
        }
        #expect(!spoolFiles().isEmpty)
        try await owner.close()
        try await LogOutboxStore.purge(root: Self.root, partition: "alice", configuration: configuration)
        #expect(spoolFiles().isEmpty)
        let next = try await Self.open(configuration)
        #expect(try await next.summary().unsent == 0)
        try await next.close()
    }

    @Test("a watch moves a spool in when its writer pokes; once the store is closed, a look refuses (and a watch ends)")
    func watchIngestsAndEnds() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        let reports = AsyncStream<OutboxSpoolReport>.makeStream()
        let watch = owner.watchSpools(pollInterval: .milliseconds(5)) { reports.continuation.yield($0) }
        let request = Self.request("poked")
        _ = try await Self.enqueue([request], configuration)
        var iterator = reports.stream.makeAsyncIterator()
        let report = await iterator.next()
        #expect(report?.ingested == 1)
        #expect(try await owner.entry(request.id) != nil)
        try await owner.close()
        await #expect(throws: OutboxError.self) { _ = try await owner.ingestSpools() }
        watch.cancel()
    }

    @Test("a spool whose writer is still creating it (its guard held, its directory empty) is left alone")
    func spoolBeingCreatedIsLeftAlone() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = Self.configuration(fileSystem)
        let owner = try await Self.open(configuration)
        _ = try await Self.enqueue([Self.request("one")], configuration)
        let queueSpools = Self.root.appending("spools").appending(try #require(try fileSystem.contentsOfDirectory(Self.root.appending("spools")).first))
        #expect(try await owner.ingestSpools().spoolsDeleted == 1)
        // A writer between its guard and its log's lock: the guard held, the directory made, nothing in it yet.
        let name = "spool+" + String(repeating: "ab", count: 16)
        let guardLock = try fileSystem.openAndLock(queueSpools.appending(name + ".lock"))
        try fileSystem.createDirectory(queueSpools.appending(name))
        let report = try await owner.ingestSpools()
        #expect(report.spoolsBusy == 1 && report.spoolsDeleted == 0, "\(report)")
        #expect(try fileSystem.itemKind(at: queueSpools.appending(name)) == .directory)
        #expect(try fileSystem.contentsOfDirectory(queueSpools.appending(name)).isEmpty)  // not even locked by the owner
        // Once the writer is gone (killed before it wrote), the owner cleans up.
        try fileSystem.close(guardLock)
        #expect(try await owner.ingestSpools().spoolsDeleted == 1)
        #expect(try fileSystem.contentsOfDirectory(queueSpools).filter { $0.hasPrefix("spool+") }.isEmpty)
        try await owner.close()
    }
}
