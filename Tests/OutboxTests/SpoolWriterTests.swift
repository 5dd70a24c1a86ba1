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
        let writer = try await LogOutboxStore.spoolWriter(root: SpoolTests.root, partition: "alice", configuration: configuration)
        var written: [OutboxSpooledEntry] = []
        for batch in 0..<3 { written += try await writer.enqueue(Self.requests(4, from: batch * 4)) }
        try await writer.close()
        #expect(written.count == 12)
        let store = try await LogOutboxStore.open(root: SpoolTests.root, partition: "alice", configuration: configuration)
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
        let owner = try await LogOutboxStore.open(root: SpoolTests.root, partition: "alice", configuration: configuration)
        let writer = try await LogOutboxStore.spoolWriter(
            root: SpoolTests.root, partition: "alice", configuration: configuration, entriesPerSpool: 5)
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
        let writer = try await LogOutboxStore.spoolWriter(root: SpoolTests.root, partition: "alice", configuration: configuration)
        _ = try await writer.enqueue(Self.requests(2))
        var bad = Self.requests(2, from: 2)
        bad[1].endpoint = ""
        await #expect(throws: OutboxError.self) { try await writer.enqueue(bad) }
        _ = try await writer.enqueue(Self.requests(1, from: 4))
        try await writer.close()
        let closed = await #expect(throws: OutboxError.self) { try await writer.enqueue(Self.requests(1, from: 5)) }
        #expect(closed?.code == .closed)
        let store = try await LogOutboxStore.open(root: SpoolTests.root, partition: "alice", configuration: configuration)
        #expect(try await store.entries(matching: OutboxFilter()).map(\.payload) == [0, 1, 4].map { Array("entry \($0)".utf8) })
        try await store.close()
    }

    @Test("encrypted: the writer's spools are sealed under the queue's key and move in under it")
    func encrypted() async throws {
        let fileSystem = SimulatedFileSystem()
        let key = [UInt8](repeating: 7, count: 32)
        let configuration = SpoolTests.configuration(fileSystem, key: key)
        let writer = try await LogOutboxStore.spoolWriter(root: SpoolTests.root, partition: "alice", configuration: configuration)
        _ = try await writer.enqueue([SpoolTests.request("secret payload")])
        try await writer.close()
        let spoolFiles = fileSystem.allFiles().filter { $0.string.contains("/spool+") }
        #expect(!spoolFiles.isEmpty)
        for file in spoolFiles {
            let text = String(decoding: fileSystem.contents(of: file) ?? [], as: UTF8.self)
            #expect(!text.contains("secret payload") && !text.contains("/messages"), "\(file)")
        }
        let store = try await LogOutboxStore.open(root: SpoolTests.root, partition: "alice", configuration: configuration)
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
        return try await LogOutboxStore.open(root: SpoolTests.root, partition: "alice", configuration: configuration)
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

    @Test("once the queue is full, the look stops: the later rounds' spools wait, whole, for the next")
    func fullStopsTheRounds() async throws {
        let fileSystem = SimulatedFileSystem()
        let owner = try await Self.owner(fileSystem, maximumEntries: 5)
        let payloads = try await Self.spool([3, 3, 3, 3], fileSystem)
        var report = try await owner.ingestSpools()
        #expect(report.ingested == 5 && report.left == 1 && report.spoolsDeleted == 1, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.payload) == Array(payloads[..<5]))
        for entry in try await owner.entries(matching: OutboxFilter()) { _ = try await owner.discard(entry.id) }
        report = try await owner.ingestSpools()
        #expect(report.ingested == 5 && report.left == 2, "\(report)")
        #expect(try await owner.entries(matching: OutboxFilter()).map(\.payload) == Array(payloads[5..<10]))
        try await owner.close()
    }
}
