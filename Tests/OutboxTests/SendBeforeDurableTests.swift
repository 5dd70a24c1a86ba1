import Foundation
import OutboxLog
import OutboxLogTesting
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// Nothing is handed to a handler before the entry's own enqueue has reached
/// the durability it was enqueued with (`enqueueDurability`). The log may
/// report a later record `written` before an earlier one is `durable`; a
/// claim must not take that as leave to send the earlier entry.
@Suite("Send before durable", .timeLimit(.minutes(5)))
struct SendBeforeDurableTests {
    static func core(_ backend: ScriptedBackend, configure: (inout OutboxStoreConfiguration) -> Void = { _ in }) -> StoreCore {
        var configuration = quietConfiguration()
        configure(&configuration)
        return StoreCore(
            partition: "p", configuration: configuration, backend: backend,
            scheduler: Scheduler(partition: "p", configuration: configuration))
    }

    static let syncFailure = OutboxError.storage(OutboxLogError(.io, "sync failed; the data may not be on disk"))

    @Test("a claim racing an enqueue whose sync then fails hands out nothing")
    func claimWaitsForTheEnqueuesSync() async throws {
        let backend = ScriptedBackend()
        let core = Self.core(backend)
        let enqueue = Task { try await core.enqueue(request(payload: "A")) }
        await backend.waitForDurableWaiters(1)  // written, not yet durable
        let claim = Task { try await core.claimDue(at: Date(), limit: 10, lease: .seconds(30)) { _ in true } }
        // The claim's attempt mark is submitted after the enqueue's body.
        while backend.submittedBatches < 2 { await Task.yield() }
        backend.failSync(Self.syncFailure)
        let claimed = await claim.result
        let enqueued = await enqueue.result
        if case .success(let claim) = claimed {
            Issue.record("the claim handed out \(claim.entries.map(\.payload)) before its enqueue was durable")
        }
        #expect(throws: OutboxError.self) { try enqueued.get() }
    }

    @Test("the claim waits for that sync, then hands the entry out")
    func claimHandsOutOnceDurable() async throws {
        let backend = ScriptedBackend()
        let core = Self.core(backend)
        let enqueue = Task { try await core.enqueue(request(payload: "A")) }
        await backend.waitForDurableWaiters(1)
        let claim = Task { try await core.claimDue(at: Date(), limit: 10, lease: .seconds(30)) { _ in true } }
        await backend.waitForDurableWaiters(2)  // the claim waits too
        backend.syncAll()
        let entries = try await claim.value.entries
        #expect(entries.map(\.payload) == [Array("A".utf8)])
        _ = try await enqueue.value
    }

    @Test("beginAttempt waits for the enqueue's sync too")
    func beginAttemptWaitsForTheEnqueuesSync() async throws {
        let backend = ScriptedBackend()
        let core = Self.core(backend)
        let id = OutboxEntry.ID()
        let enqueue = Task { try await core.enqueue(request(id, payload: "A")) }
        await backend.waitForDurableWaiters(1)
        let begin = Task { try await core.beginAttempt(id, at: Date(), lease: .seconds(30)) }
        while backend.submittedBatches < 2 { await Task.yield() }
        backend.failSync(Self.syncFailure)
        if case .success(let entry) = await begin.result {
            Issue.record("beginAttempt handed out \(entry.id) before its enqueue was durable")
        }
        _ = await enqueue.result
    }

    @Test("a duplicate of an enqueue still waiting for its sync answers only once that sync has, and fails with it")
    func duplicateWaitsForTheOriginal() async throws {
        let backend = ScriptedBackend()
        let core = Self.core(backend)
        let id = OutboxEntry.ID()
        let first = Task { try await core.enqueue(request(id, payload: "A")) }
        await backend.waitForDurableWaiters(1)
        let second = Task { try await core.enqueue(request(id, payload: "A")) }
        await backend.waitForDurableWaiters(2)  // the duplicate waits for the first one's sync
        backend.failSync(Self.syncFailure)
        let duplicate = await second.result
        #expect(throws: OutboxError.self) { try duplicate.get() }
        _ = await first.result
    }

    @Test("an entry whose enqueue already returned is claimed at the attempt's durability, without a sync")
    func confirmedEntriesNeedNoSync() async throws {
        let backend = ScriptedBackend()
        let core = Self.core(backend)
        let enqueue = Task { try await core.enqueue(request(payload: "A")) }
        await backend.waitForDurableWaiters(1)
        backend.syncAll()
        _ = try await enqueue.value
        let claim = try await core.claimDue(at: Date(), limit: 10, lease: .seconds(30)) { _ in true }
        #expect(claim.entries.count == 1)
        #expect(backend.durableWaiters == 0)
    }

    @Test("with a written enqueue durability, the claim does not wait for a sync")
    func writtenEnqueuesAreNotHeldBack() async throws {
        let backend = ScriptedBackend()
        let core = Self.core(backend) { $0.enqueueDurability = .written }
        _ = try await core.enqueue(request(payload: "A"))
        let claim = try await core.claimDue(at: Date(), limit: 10, lease: .seconds(30)) { _ in true }
        #expect(claim.entries.count == 1)
    }

    @Test("on the simulated disk, a sync that fails under a draining dispatcher: nothing whose enqueue failed is applied")
    func failedSyncWhileDraining() async throws {
        for round in 0..<12 {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let configuration = quietConfiguration(on: disk)
            let store = try await LogOutboxStore.open(root: "/data/outbox", partition: "p", configuration: configuration)
            // The first syncs succeed (so some enqueues are acknowledged and
            // sent), then one fails after its write: the log is poisoned.
            _ = disk.faults.install(.fromNthCall(2 + round % 6, of: .synchronize))
            let server = ScriptedHandler()
            var dispatching = OutboxDispatcherConfiguration()
            dispatching.maximumAge = nil
            dispatching.randomSeed = UInt64(round)
            let dispatcher = OutboxDispatcher(store: store, handlers: ["post": server], configuration: dispatching)
            await dispatcher.start()
            // Four producers enqueue while the dispatcher claims.
            let outcomes = await withTaskGroup(of: [(String, Bool)].self) { group in
                for producer in 0..<4 {
                    group.addTask {
                        var results: [(String, Bool)] = []
                        for index in 0..<10 {
                            let text = "\(round)-\(producer)-\(index)"
                            let accepted = (try? await dispatcher.enqueue(request(payload: text))) != nil
                            results.append((text, accepted))
                        }
                        return results
                    }
                }
                var all: [(String, Bool)] = []
                for await results in group { all += results }
                return all
            }
            await dispatcher.stop()
            try? await store.close()
            let refused = Set(outcomes.filter { !$0.1 }.map(\.0))
            let acknowledged = Set(outcomes.filter { $0.1 }.map(\.0))
            let applied = Set(server.deliveries.map { String(decoding: $0.entry.payload, as: UTF8.self) })
            #expect(!refused.isEmpty, "round \(round): the injected sync failure never hit an enqueue \(disk.faults.injectedFaults) \(disk.faults.callCounts)")
            #expect(applied.isDisjoint(with: refused), "round \(round): sent although its enqueue failed: \(applied.intersection(refused).sorted())")

            // The machine dies: what was acknowledged is there (or was
            // delivered); nothing whose enqueue failed came back.
            disk.faults.removeAllRules()
            disk.simulatePowerLoss(.dropUnsynced, seed: UInt64(round))
            let reopened = try await LogOutboxStore.open(root: "/data/outbox", partition: "p", configuration: configuration)
            let kept = Set(try await reopened.entries(matching: .all).map { String(decoding: $0.payload, as: UTF8.self) })
            #expect(kept.isDisjoint(with: refused), "round \(round)")
            #expect(acknowledged.subtracting(applied).isSubset(of: kept), "round \(round): an acknowledged entry was lost")
            try await reopened.close()
        }
    }
}
