import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// `OutboxSpoolWriter`: a long run of batches through spools, never
/// opening the queue (Docs/OUTBOX.md, "A long run of writes").
@Suite("Spool writer")
struct SpoolWriterTests {
    static func requests(_ count: Int, from first: Int = 0) -> [OutboxEnqueueRequest] {
        (first..<first + count).map { SpoolTests.request("entry \($0)") }
    }

    @Test("with no owner, batches go into spools the next open moves in, in order, with their ids and keys")
    func freeQueue() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(fileSystem)
        let writer = try await SpoolTests.spoolWriter(configuration)
        var written: [OutboxSpooledEntry] = []
        for batch in 0..<3 { written += try await writer.enqueue(Self.requests(4, from: batch * 4)) }
        try await writer.close()
        #expect(written.count == 12)
        let store = try await SpoolTests.open(configuration)
        #expect(store.spoolReportAtOpen.ingested == 12, "\(store.spoolReportAtOpen)")
        let entries = try await store.entries(matching: OutboxFilter())
        #expect(entries.map(\.id) == written.map(\.id))
        #expect(entries.map(\.idempotencyKey) == written.map(\.idempotencyKey))
        #expect(entries.map(\.payload) == (0..<12).map { Array("entry \($0)".utf8) })
        try await store.close()
    }

    @Test("a spool is handed over each time it fills: the owner takes the closed ones, never the one still open")
    func rotation() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(fileSystem)
        let owner = try await SpoolTests.open(configuration)
        let writer = try await SpoolTests.spoolWriter(configuration, entriesPerSpool: 5)
        _ = try await writer.enqueue(Self.requests(3))
        _ = try await writer.enqueue(Self.requests(3, from: 3))  // 6 ≥ 5: closed and handed over
        _ = try await writer.enqueue(Self.requests(2, from: 6))  // a new spool, still open
        var report = try await owner.ingestSpools()
        #expect(report.ingested == 6 && report.spoolsDeleted == 1 && report.spoolsBusy == 1, "\(report)")
        try await writer.close()
        report = try await owner.ingestSpools()
        #expect(report.ingested == 2 && report.spoolsDeleted == 1 && report.spoolsBusy == 0, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.payload) == (0..<8).map { Array("entry \($0)".utf8) })
        try await owner.close()
    }

    @Test("a bad request writes nothing of its batch; a closed writer refuses")
    func refusals() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(fileSystem)
        let writer = try await SpoolTests.spoolWriter(configuration)
        _ = try await writer.enqueue(Self.requests(2))
        var bad = Self.requests(2, from: 2)
        bad[1].endpoint = ""
        await #expect(throws: OutboxError.self) { try await writer.enqueue(bad) }
        _ = try await writer.enqueue(Self.requests(1, from: 4))
        try await writer.close()
        let closed = await #expect(throws: OutboxError.self) { try await writer.enqueue(Self.requests(1, from: 5)) }
        #expect(closed?.code == .closed)
        let store = try await SpoolTests.open(configuration)
        #expect(try await store.entries(matching: OutboxFilter()).map(\.payload) == [0, 1, 4].map { Array("entry \($0)".utf8) })
        try await store.close()
    }

    @Test("encrypted: the writer's spools are sealed under the queue's key and move in under it")
    func encrypted() async throws {
        let fileSystem = SimulatedFileSystem()
        let key = [UInt8](repeating: 7, count: 32)
        let configuration = SpoolTests.configuration(fileSystem, key: key)
        let writer = try await SpoolTests.spoolWriter(configuration)
        _ = try await writer.enqueue([SpoolTests.request("secret payload")])
        try await writer.close()
        SpoolTests.expectSpools(on: fileSystem, hiding: ["secret payload", "/messages"])
        let store = try await SpoolTests.open(configuration)
        #expect(try await store.entries(matching: OutboxFilter()).map(\.payload) == [Array("secret payload".utf8)])
        try await store.close()
    }
}

/// A look moves spools in a round at a time, oldest first.
@Suite("Spool rounds")
struct SpoolRoundTests {
    static func owner(_ fileSystem: SimulatedFileSystem, maximumEntries: Int? = nil) async throws -> LogOutboxStore {
        var configuration = SpoolTests.configuration(fileSystem)
        configuration.spoolRound.records = 4
        configuration.spoolRound.spools = 2
        if let maximumEntries { configuration.maximumEntries = maximumEntries }
        return try await SpoolTests.open(configuration)
    }

    /// Spools of `sizes` entries, written one after the other while the
    /// queue is held; returns the payloads in the order written.
    static func spool(_ sizes: [Int], _ fileSystem: SimulatedFileSystem) async throws -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        for size in sizes {
            let requests = (0..<size).map { _ in SpoolTests.request("entry \(payloads.count)") }
            for _ in 0..<size { payloads.append(Array("entry \(payloads.count)".utf8)) }
            _ = try await LogOutboxStore.enqueue(
                requests.enumerated().map { index, request in
                    var request = request
                    request.payload = payloads[payloads.count - size + index]
                    return request
                }, root: SpoolTests.root, partition: "alice", configuration: SpoolTests.configuration(fileSystem))
        }
        return payloads
    }

    @Test("more spools than a round holds all move in, in the order they were written, in one look")
    func severalRounds() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await Self.owner(fileSystem)
        let payloads = try await Self.spool([3, 3, 1, 2, 5], fileSystem)
        let report = try await owner.ingestSpools()
        #expect(report.ingested == 14 && report.spoolsDeleted == 5 && report.problems.isEmpty, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.payload) == payloads)
        try await owner.close()
    }

    @Test("once the queue is full, each spool keeps what it could not move in, in order, for the next look")
    func fullKeepsTheRestInOrder() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await Self.owner(fileSystem, maximumEntries: 5)
        let payloads = try await Self.spool([3, 3, 3, 3], fileSystem)
        var report = try await owner.ingestSpools()
        #expect(report.ingested == 5 && report.left == 7 && report.spoolsDeleted == 1, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.payload) == Array(payloads[..<5]))
        for entry in try await owner.entries(matching: OutboxFilter()) { _ = try await owner.discard(entry.id) }
        report = try await owner.ingestSpools()
        #expect(report.ingested == 5 && report.left == 2, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.payload) == Array(payloads[5..<10]))
        try await owner.close()
    }
}

/// A look in rounds keeps what one look at every spool promised.
@Suite("Spool rounds and dependencies")
struct SpoolRoundDependencyTests {
    @Test("a dependency spooled in a later round than its dependents is waited for: nothing is quarantined")
    func dependencyInLaterRound() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await SpoolRoundTests.owner(fileSystem)
        let configuration = SpoolTests.configuration(fileSystem)
        let parent = OutboxEntry.ID()
        // The dependents' spool is older: a round of its own (4 records).
        let children = (0..<4).map { SpoolTests.request("child \($0)", dependencies: [parent]) }
        _ = try await LogOutboxStore.enqueue(children, root: SpoolTests.root, partition: "alice", configuration: configuration)
        _ = try await LogOutboxStore.enqueue(
            [SpoolTests.request("parent", id: parent)], root: SpoolTests.root, partition: "alice", configuration: configuration)
        let report = try await owner.ingestSpools()
        #expect(report.ingested == 5 && report.quarantined == 0 && report.spoolsDeleted == 2, "\(report)")
        let entries = try await owner.entries(matching: OutboxFilter())
        #expect(entries.allSatisfy { $0.status == .pending })
        #expect(entries.first?.id == parent)
        try await owner.close()
    }

    @Test("a dependency no spool holds is still recorded quarantined, once every round has been tried")
    func unknownDependencyAfterEveryRound() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await SpoolRoundTests.owner(fileSystem)
        let configuration = SpoolTests.configuration(fileSystem)
        let orphan = SpoolTests.request("orphan", dependencies: [OutboxEntry.ID()])
        _ = try await LogOutboxStore.enqueue([orphan], root: SpoolTests.root, partition: "alice", configuration: configuration)
        _ = try await SpoolRoundTests.spool([4, 2], fileSystem)
        let report = try await owner.ingestSpools()
        #expect(report.ingested == 6 && report.quarantined == 1 && report.spoolsDeleted == 3, "\(report)")
        #expect(try await owner.entry(orphan.id)?.status == .quarantined)
        try await owner.close()
    }

    @Test("a spool the queue stops taking (one entry too large for what is left) does not hold back the spools after it")
    func stoppedSpoolDoesNotStarveLaterOnes() async throws {
        let fileSystem = SimulatedFileSystem()
        var configuration = SpoolTests.configuration(fileSystem)
        configuration.spoolRound.records = 4
        configuration.maximumBytes = 4_000
        let owner = try await SpoolTests.open(configuration)
        // What the queue holds leaves room for small entries, not a large one.
        var filler = SpoolTests.request("filler")
        filler.payload = [UInt8](repeating: 2, count: 2_500)
        _ = try await owner.enqueue(filler)
        let writer = SpoolTests.configuration(fileSystem)
        var large = SpoolTests.request("large")
        large.payload = [UInt8](repeating: 1, count: 1_500)
        _ = try await LogOutboxStore.enqueue(
            [large] + (0..<3).map { SpoolTests.request("after large \($0)") }, root: SpoolTests.root, partition: "alice",
            configuration: writer)
        let small = (0..<2).map { SpoolTests.request("small \($0)") }
        _ = try await LogOutboxStore.enqueue(small, root: SpoolTests.root, partition: "alice", configuration: writer)
        let report = try await owner.ingestSpools()
        #expect(report.ingested == 2 && report.left == 4, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.id) == [filler.id] + small.map(\.id))
        try await owner.close()
    }

    @Test("concurrent enqueues on one spool writer go one at a time, and close hands every spool over")
    func concurrentWriterCalls() async throws {
        let fileSystem = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(fileSystem)
        let owner = try await SpoolTests.open(configuration)
        let writer = try await SpoolTests.spoolWriter(configuration, entriesPerSpool: 3)
        async let a = writer.enqueue(SpoolWriterTests.requests(2))
        async let b = writer.enqueue(SpoolWriterTests.requests(2, from: 2))
        async let c = writer.enqueue(SpoolWriterTests.requests(2, from: 4))
        let written = try await a + b + c
        try await writer.close()
        let report = try await owner.ingestSpools()
        #expect(written.count == 6)
        #expect(report.ingested == 6 && report.spoolsBusy == 0, "\(report)")
        try await owner.close()
    }
}
