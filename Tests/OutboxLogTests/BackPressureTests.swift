import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Every entry point obeys `maximumPendingBytes`: with the writer stuck in
/// a sync, appended bytes in memory never exceed it.
@Suite("Back-pressure")
struct BackPressureTests {
    static let maximum = 16 << 10

    /// A log whose writer is stuck in a sync (a durable append in flight);
    /// returns the log, the file system to release it, and that append.
    static func stuckLog(_ disk: SimulatedFileSystem) async throws -> (OutboxLog, GatedSyncFileSystem, Task<Void, any Error>) {
        let gated = GatedSyncFileSystem(base: disk)
        var configuration = simulatedConfiguration(gated, segmentSize: 1 << 20)
        configuration.groupCommitLimit = 4096
        configuration.maximumPendingBytes = maximum
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        try await log.put("first", [1], durability: .durable)
        let syncs = gated.counts.syncs
        gated.holdSyncs()
        let stuck = Task { _ = try await log.put("stuck", [2], durability: .durable) }
        while gated.counts.syncs == syncs { await Task.yield() }  // the writer is inside the held sync
        return (log, gated, stuck)
    }

    @Test("a ticket says what it has reached without writing or waiting")
    func ticketHasReached() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (log, gated, stuck) = try await Self.stuckLog(disk)
        // The writer is inside a held sync: nothing submitted now is written yet.
        let ticket = try log.submit([.value("t", [7])])
        #expect(ticket.hasReached(.buffered))
        #expect(!ticket.hasReached(.written))
        #expect(!ticket.hasReached(.durable))
        #expect(log.statistics.writtenSequence < ticket.sequence)
        gated.releaseSyncs()
        try await stuck.value
        try await ticket.wait(for: .durable)
        #expect(ticket.hasReached(.written))
        #expect(ticket.hasReached(.durable))
        try await log.close()
    }

    @Test("submit is refused with .backPressure, writing nothing, once the bound would be exceeded")
    func submitObeysTheBound() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (log, gated, stuck) = try await Self.stuckLog(disk)
        var tickets: [LogTicket] = []
        var refused: OutboxLogError?
        for i in 0..<100 {
            do {
                tickets.append(try log.submit([.value(LogKey("s\(i)"), .pattern(1000, seed: i))]))
            } catch {
                refused = error
                break
            }
            #expect(log.statistics.pendingBytes <= Self.maximum)
        }
        #expect(refused?.code == .backPressure, "\(String(describing: refused))")
        #expect(log.statistics.pendingBytes <= Self.maximum)
        let accepted = tickets.count
        #expect(accepted > 0 && accepted < 100)
        #expect(!log.contains(LogKey("s\(accepted)")), "a refused submit wrote something")

        // Room comes back once the writer moves; then submitting works again.
        let waiting = Task { try await log.waitForRoom(bytes: 1100) }
        gated.releaseSyncs()
        try await stuck.value
        try await waiting.value
        let ticket = try log.submit([.value("after", [3])])
        try await ticket.wait(for: .durable)
        for i in 0..<accepted { #expect(try await log.get(LogKey("s\(i)"))?.value == .pattern(1000, seed: i)) }
        try await log.close()
    }

    @Test("concurrent appends of every durability wait for room instead of piling up", arguments: Durability.allCases)
    func appendsObeyTheBound(_ durability: Durability) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (log, gated, stuck) = try await Self.stuckLog(disk)
        let peak = Locked(0)
        let appends = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<64 {
                    group.addTask {
                        try await log.put(LogKey("a\(i)"), .pattern(1000, seed: i), durability: durability)
                    }
                }
                try await group.waitForAll()
            }
        }
        // Until the writer moves, at most the bound can be encoded: watch
        // the statistics while the appends pile up against it.
        var watched = 0
        for _ in 0..<1_000_000 where watched < 200 {
            let pending = log.statistics.pendingBytes
            peak.withLock { $0 = max($0, pending) }
            if pending > Self.maximum - 1100 { watched += 1 }
            await Task.yield()
        }
        #expect(watched == 200, "the appends never filled the bound")
        #expect(peak.value <= Self.maximum, "pending bytes reached \(peak.value)")
        gated.releaseSyncs()
        try await stuck.value
        try await appends.value
        for i in 0..<64 { #expect(try await log.get(LogKey("a\(i)"))?.value == .pattern(1000, seed: i)) }
        try await log.close()
    }

    /// A caller that submits under its own lock after changing its own state
    /// (the outbox store) cannot take a refusal: it reserves room first.
    @Test("a commit in reserved room is admitted when a plain submit is refused; a reservation serves once, and goes back unused")
    func reservedRoom() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (log, gated, stuck) = try await Self.stuckLog(disk)
        var reservation: LogReservation? = try await log.reserve(bytes: 1100)
        var submitted = 0
        while (try? log.submit([.value(LogKey("s\(submitted)"), .pattern(1000, seed: submitted))])) != nil { submitted += 1 }
        #expect(throws: OutboxLogError.self) { try log.submit([.value("plain", .pattern(1000, seed: 0))]) }
        #expect(log.reserveIfAvailable(bytes: 1100) == nil, "no room now: the caller must wait for it")
        let ticket = try reservation!.commit([.value("reserved", .pattern(1000, seed: 1))])
        #expect(log.statistics.pendingBytes <= Self.maximum)
        let reused = #expect(throws: OutboxLogError.self) { try reservation!.commit([.value("again", [1])]) }
        #expect(reused?.code == .invalidArgument)
        #expect(!log.contains("again"))
        reservation = nil
        gated.releaseSyncs()
        try await stuck.value
        try await ticket.wait(for: .durable)
        #expect(try await log.get("reserved")?.value == .pattern(1000, seed: 1))
        try await log.close()
    }

    @Test("room reserved and not used goes back to the log when the reservation is released")
    func unusedReservationGoesBack() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (log, gated, stuck) = try await Self.stuckLog(disk)
        var held: LogReservation? = try await log.reserve(bytes: Self.maximum - 2048)
        let refused = #expect(throws: OutboxLogError.self) { try log.submit([.value("plain", .pattern(4000, seed: 0))]) }
        #expect(refused?.code == .backPressure)
        #expect(held?.bytes == Self.maximum - 2048)
        // The writer is still stuck: only the released reservation can make room.
        held = nil
        let ticket = try log.submit([.value("plain", .pattern(4000, seed: 0))])
        gated.releaseSyncs()
        try await ticket.wait(for: .durable)
        try await stuck.value
        try await log.close()
    }

    /// A log on the simulated disk whose writer keeps up, bounded at 8 KiB.
    static func boundedLog() async throws -> OutboxLog {
        var configuration = simulatedConfiguration(SimulatedFileSystem(directories: ["/data"]))
        configuration.groupCommitLimit = 4096
        configuration.maximumPendingBytes = 8192
        return try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
    }

    /// A refused batch must not keep its room: counted as reserved forever,
    /// it would shrink the bound until every later append waited for good.
    @Test("a batch refused by validation uses its reservation up and gives the room back; room taken now is committed")
    func refusedCommitGivesRoomBack() async throws {
        let log = try await Self.boundedLog()
        let room = try #require(log.reserveIfAvailable(bytes: 4096))
        #expect(log.statistics.reservedBytes == 4096)
        let refused = #expect(throws: OutboxLogError.self) { try room.commit([.tombstone("t"), .value(LogKey([]), [1])]) }
        #expect(refused?.code == .invalidArgument)
        #expect(log.statistics.reservedBytes == 0)
        #expect(!log.contains("t"))
        let again = #expect(throws: OutboxLogError.self) { try room.commit([.value("late", [1])]) }
        #expect(again?.code == .invalidArgument)

        let now = try #require(log.reserveIfAvailable(bytes: 100))
        #expect(log.reserveIfAvailable(bytes: -1) == nil)
        let ticket = try now.commit([.value("k", [1, 2, 3])])
        try await ticket.wait(for: .durable)
        #expect(log.statistics.reservedBytes == 0)
        #expect(try await log.get("k")?.value == [1, 2, 3])
        try await log.close()
        await #expect(throws: OutboxLogError.self) { _ = try await log.reserve(bytes: 10) }
        #expect(log.reserveIfAvailable(bytes: 10) == nil, "a closed log reserves nothing")
    }

    /// A size no batch can have is refused, never added to the room counts:
    /// `Int.max` once overflowed the sum under the log's lock and trapped.
    @Test("reserving or waiting for more than a batch can hold is refused, and the log stays usable")
    func impossibleSizesAreRefused() async throws {
        let log = try await Self.boundedLog()
        let held = try #require(log.reserveIfAvailable(bytes: 100))
        for bytes in [Int.max, Int.max - 1, OutboxLog.Configuration.absoluteMaximumBatchSize + 1] {
            #expect(log.reserveIfAvailable(bytes: bytes) == nil)
            let refused = await #expect(throws: OutboxLogError.self) { _ = try await log.reserve(bytes: bytes) }
            #expect(refused?.code == .invalidArgument)
            let waited = await #expect(throws: OutboxLogError.self) { try await log.waitForRoom(bytes: bytes) }
            #expect(waited?.code == .invalidArgument)
        }
        #expect(log.statistics.reservedBytes == 100)
        try await held.commit([.value("k", [1])]).wait(for: .durable)
        #expect(log.statistics.reservedBytes == 0)
        try await log.put("after", [2], durability: .durable)
        try await log.close()
    }

    @Test("a read-only log reserves nothing")
    func readOnlyLogReservesNothing() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let writable = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        try await writable.put("k", [1], durability: .durable)
        try await writable.close()
        var configuration = simulatedConfiguration(disk)
        configuration.readOnly = true
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        #expect(log.reserveIfAvailable(bytes: 10) == nil)
        let refused = await #expect(throws: OutboxLogError.self) { _ = try await log.reserve(bytes: 10) }
        #expect(refused?.code == .invalidArgument)
        #expect(log.statistics.reservedBytes == 0)
        try await log.close()
    }
}
