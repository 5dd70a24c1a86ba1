import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Crashes at every step of moving spools in, and of writing a spool: each
/// spooled entry ends in the queue exactly once (with its id, key and
/// dependencies), and every spool is gone once an owner has looked.
@Suite("Spool crash points")
struct SpoolCrashTests {
    static let root = SpoolTests.root

    /// How step `step` dies: killed, or each power-loss mode in turn (every
    /// step crashes once; each way of dying meets every fourth step).
    static func crash(at step: Int) -> PowerLossMode? {
        let ways = [nil] + PowerLossMode.allCases.map(Optional.some)
        return ways[step % ways.count]
    }

    static func open(_ fileSystem: any FileSystem) async throws -> LogOutboxStore {
        try await LogOutboxStore.open(root: root, partition: "alice", configuration: SpoolTests.configuration(fileSystem))
    }

    /// Every spooled request in the queue once, as written; no spool left.
    static func expectIngested(
        _ fileSystem: SimulatedFileSystem, parent: OutboxEntry.ID, spooled: [OutboxEnqueueRequest], _ context: String
    ) async throws {
        let store = try await open(fileSystem)
        let entries = try await store.entries(matching: OutboxFilter())
        #expect(entries.map(\.id).sorted { "\($0)" < "\($1)" } == ([parent] + spooled.map(\.id)).sorted { "\($0)" < "\($1)" }, "\(context)")
        #expect(entries.first?.id == parent, "\(context)")
        for request in spooled {
            let entry = try #require(entries.first { $0.id == request.id }, "\(context)")
            #expect(entry.dependencies == request.dependencies, "\(context)")
            #expect(entry.idempotencyKey == (request.idempotencyKey ?? OutboxEntry.derivedIdempotencyKey(partition: "alice", id: request.id)), "\(context)")
            #expect(entry.status == .pending, "\(context)")
        }
        // Each spool's order holds.
        let sequence = Dictionary(uniqueKeysWithValues: entries.map { ($0.id, $0.sequence) })
        #expect(sequence[spooled[0].id]! < sequence[spooled[1].id]! && sequence[spooled[1].id]! < sequence[spooled[2].id]!, "\(context)")
        try await store.close()
        let spools = Self.root.appending("spools")
        for queue in (try? fileSystem.contentsOfDirectory(spools)) ?? [] {
            let left = try fileSystem.contentsOfDirectory(spools.appending(queue)).filter { $0.hasPrefix("spool+") }
            #expect(left.isEmpty, "spools left: \(left) — \(context)")
        }
    }

    @Test("the owner crashes (killed, or the power fails) at each step of moving two spools in")
    func ownerCrashesWhileIngesting() async throws {
        let base = SimulatedFileSystem()
        let configuration = SpoolTests.configuration(base)
        let owner = try await Self.open(base)
        let parent = try #require(try await owner.enqueue(SpoolTests.request("parent")).newEntry)
        let first = SpoolTests.request("first", dependencies: [parent.id])
        let second = SpoolTests.request("second", dependencies: [first.id], key: "app-key")
        let third = SpoolTests.request("third")
        let fourth = SpoolTests.request("fourth", dependencies: [second.id])
        let spooled = [first, second, third, fourth]
        #expect(try await LogOutboxStore.enqueue([first, second, third], root: Self.root, partition: "alice", configuration: configuration).path == .spooled)
        #expect(try await LogOutboxStore.enqueue([fourth], root: Self.root, partition: "alice", configuration: configuration).path == .spooled)
        try await owner.close()

        let counting = CrashingFileSystem(base: base.snapshot(), crashAt: nil)
        let counted = try await Self.open(counting)
        #expect(counted.spoolReportAtOpen.ingested == 4)
        try await counted.close()
        let steps = counting.mutatingCalls
        #expect(steps > 10)
        for crashAt in 1...steps {
            do {
                let loss = Self.crash(at: crashAt)
                let fork = base.snapshot()
                let crashing = CrashingFileSystem(base: fork, crashAt: crashAt)
                if let store = try? await Self.open(crashing) { try? await store.close() }
                crashing.crash()
                if let loss { fork.simulatePowerLoss(loss, seed: UInt64(crashAt)) } else { fork.simulateProcessCrash() }
                try await Self.expectIngested(fork, parent: parent.id, spooled: spooled, "crash at step \(crashAt) of \(steps), \(loss.map { "\($0)" } ?? "killed")")
            }
        }
    }

    @Test("the writer crashes (killed, or the power fails) at each step of writing its spool")
    func writerCrashesWhileSpooling() async throws {
        let setup = SimulatedFileSystem()
        let owner = try await Self.open(setup)
        let parent = try #require(try await owner.enqueue(SpoolTests.request("parent")).newEntry)
        try await owner.close()
        let spooled = [
            SpoolTests.request("first", dependencies: [parent.id]), SpoolTests.request("second"), SpoolTests.request("third"),
        ]
        // Count the writer's steps while an owner holds the queue.
        let counting = setup.snapshot()
        let holder = try await Self.open(counting)
        let countingWriter = CrashingFileSystem(base: counting, crashAt: nil)
        #expect(try await LogOutboxStore.enqueue(
            spooled, root: Self.root, partition: "alice", configuration: SpoolTests.configuration(countingWriter)).path == .spooled)
        try await holder.close()
        let steps = countingWriter.mutatingCalls
        for crashAt in 1...steps {
            do {
                let loss = Self.crash(at: crashAt)
                let fork = setup.snapshot()
                let holder = try await Self.open(fork)
                let writer = CrashingFileSystem(base: fork, crashAt: crashAt)
                let acknowledged = (try? await LogOutboxStore.enqueue(
                    spooled, root: Self.root, partition: "alice", configuration: SpoolTests.configuration(writer))) != nil
                writer.crash()
                // Both processes die (the owner is killed with the machine, or on its own).
                if let loss { fork.simulatePowerLoss(loss, seed: UInt64(crashAt)) } else { fork.simulateProcessCrash() }
                try? await holder.close()  // its descriptors are gone: this only stops its threads
                let context = "writer crash at step \(crashAt) of \(steps), \(loss.map { "\($0)" } ?? "killed")"
                let store = try await Self.open(fork)
                let ids = try await store.entries(matching: OutboxFilter()).map(\.id)
                try await store.close()
                // All or nothing: the spool's batch is atomic; all if acknowledged.
                #expect(ids == [parent.id] || Set(ids) == Set([parent.id] + spooled.map(\.id)), "\(context): \(ids)")
                if acknowledged {
                    #expect(Set(ids) == Set([parent.id] + spooled.map(\.id)), "\(context): acknowledged, then lost")
                }
                if ids.count > 1 { try await Self.expectIngested(fork, parent: parent.id, spooled: spooled, context) }
            }
        }
    }

    @Test("a spool the owner could not delete is not moved in again, even once its entries were delivered and forgotten")
    func markSkipsWhatWasMovedIn() async throws {
        let fileSystem = SimulatedFileSystem()
        var configuration = SpoolTests.configuration(fileSystem)
        configuration.mappingRetention = .zero  // a delivered entry is forgotten at the next prune
        let owner = try await SpoolTests.open(configuration)
        let spooled = SpoolTests.request("once")
        _ = try await LogOutboxStore.enqueue([spooled], root: Self.root, partition: "alice", configuration: configuration)
        // The spool's deletion fails (as if the owner died right after its batch was durable).
        let rule = fileSystem.faults.install(
            FaultRule(failing: .removeFile, repetition: .always, paths: .matching("a spool") { $0.string.contains("/spool+") }))
        var report = try await owner.ingestSpools()
        #expect(report.ingested == 1 && report.spoolsDeleted == 0 && report.problems.count == 1)
        fileSystem.faults.remove(rule)
        _ = try await owner.claimDue(at: Date(), limit: 1, lease: .seconds(60)) { _ in true }
        try await owner.recordSuccess(spooled.id, serverID: "s1", at: Date())
        try await owner.prune(at: Date().addingTimeInterval(1))
        #expect(try await owner.completion(of: spooled.id) == nil)  // the queue no longer knows the id
        report = try await owner.ingestSpools()
        #expect(report.ingested == 0 && report.duplicates == 0 && report.spoolsDeleted == 1, "\(report)")
        #expect(try await owner.summary().unsent == 0)
        try await owner.close()
    }
}
