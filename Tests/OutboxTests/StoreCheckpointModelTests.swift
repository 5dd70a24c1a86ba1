import CLITestSupport
import Foundation
import OutboxLog
import OutboxLogTesting
import PropertyBased
import SystemPackage
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// Checkpoint plus the records after it rebuilds what reading every entry
/// rebuilds: random histories (scopes, dependencies, coalescing and
/// app-supplied keys, every outcome, compactions) with store checkpoints
/// taken at random points, ended by a clean close or a kill; the same disk
/// is then opened twice — once as it is (the checkpoint, then the entries
/// changed after it), once without its checkpoint (every entry) — and the
/// two stores must answer alike.
@Suite("Store checkpoint model", .propertySeedFromEnvironment)
struct StoreCheckpointModelTests {
    typealias Step = StoreStep

    static let step = Gen<Step>.frequency(
        (6, zip(Gen.int(in: 0...3), Gen.int(in: 0...6), Gen.int(in: -1...1), Gen.int(in: 0...4), Gen.int(in: 0...6)).map {
            Step.enqueue(
                scope: $0, parent: $1 < 4 ? $1 : nil, priority: $2, coalesce: $3 < 2 ? $3 : nil, appKey: $4 < 2 ? $4 : nil)
        }),
        (4, Gen.int(in: 0...5).map { Step.begin($0) }),
        (3, Gen.int(in: 0...5).map { Step.succeed($0) }),
        (2, Gen.int(in: 0...5).map { Step.fail($0) }),
        (1, Gen.int(in: 0...9).map { Step.quarantine($0) }),
        (1, Gen.int(in: 0...9).map { Step.retry($0) }),
        (1, Gen.int(in: 0...9).map { Step.discard($0) }),
        (2, Gen.int(in: 1...120).map { Step.advance(seconds: $0) }),
        (2, Gen.always(Step.checkpoint)),
        (1, Gen.always(Step.compact))
    )

    static func configuration(_ disk: SimulatedFileSystem) -> OutboxStoreConfiguration {
        // Small segments, and checkpoints only where the test takes them.
        var configuration = StoreReopenTests.configuration(disk)
        configuration.succeededRetention = nil
        return configuration
    }

    @Test("a checkpoint and the entries changed after it rebuild what every entry rebuilds")
    func checkpointEqualsFullLoad() async throws {
        let usedCheckpoint = Counter()
        await propertyCheck(count: modelCases(30), input: zip(Gen.bool, Self.step.array(of: 1...50))) { kill, steps in
            let disk = SimulatedFileSystem(directories: ["/data"])
            let root = FilePath("/data/root")
            var now = Date(timeIntervalSince1970: 1_800_000_000)
            let store = try await LogOutboxStore.open(root: root, partition: "p", configuration: Self.configuration(disk), now: now)
            var known: [OutboxEntry.ID] = []
            for (index, step) in steps.enumerated() {
                let inFlight = try await store.entries(matching: OutboxFilter(statuses: [.inFlight])).map(\.id)
                switch step {
                case .enqueue(let scope, let parent, let priority, let coalesce, _, let appKey):
                    let dependencies = parent.flatMap { known.indices.contains($0) ? [known[known.count - 1 - $0]] : nil } ?? []
                    let request = OutboxEnqueueRequest(
                        id: modelEntryID(step: index), idempotencyKey: appKey.map { "key-\($0)" }, type: "t\(scope)",
                        method: "POST", endpoint: "/things", payload: Array("\(index)".utf8),
                        scope: scope == 0 ? nil : "s\(scope)", dependencies: dependencies, priority: priority,
                        coalescingKey: coalesce.map { "c\($0)" }, maxAttempts: 3, createdAt: now)
                    _ = try? await store.enqueue(request)
                    known.append(request.id)
                case .begin(let n):
                    let due = try await store.dueIDs(at: now, limit: 10)
                    if !due.isEmpty { _ = try? await store.beginAttempt(due[n % due.count], at: now, lease: .seconds(30)) }
                case .succeed(let n):
                    if !inFlight.isEmpty { try? await store.recordSuccess(inFlight[n % inFlight.count], serverID: "srv-\(index)", at: now) }
                case .fail(let n):
                    if !inFlight.isEmpty {
                        _ = try? await store.recordFailure(
                            inFlight[n % inFlight.count], StoreStep.transientFailure, retryAt: now.addingTimeInterval(30))
                    }
                case .quarantine(let n):
                    if !known.isEmpty { _ = try? await store.quarantine(known[n % known.count], StoreStep.permanentFailure) }
                case .retry(let n):
                    if !known.isEmpty { _ = try? await store.retry(known[n % known.count], at: now) }
                case .discard(let n):
                    if !known.isEmpty { _ = try? await store.discard(known[n % known.count]) }
                case .advance(let seconds):
                    now = now.addingTimeInterval(Double(seconds))
                case .checkpoint:
                    await store.core.writeCheckpoint(waitingForRunning: true)
                case .compact:
                    _ = try await store.log.compact()
                case .beginAny, .conflict, .retryQuarantined, .reopen:
                    continue  // not generated here
                }
            }
            let directory = store.log.directory
            if kill {
                // Everything written, nothing of the dead process still running.
                try await store.log.flush()
                await store.core.waitForCheckpoint()
                await store.log.waitForBackgroundCompaction()
                disk.simulateProcessCrash()
            } else {
                try await store.close()
            }
            let withCheckpoint = disk.snapshot()
            let withoutCheckpoint = disk.snapshot()
            try? withoutCheckpoint.removeFile(directory.appending(StoreCheckpoint.fileName))
            let reopenedAt = now.addingTimeInterval(1)
            let fast = try await LogOutboxStore.open(
                root: root, partition: "p", configuration: Self.configuration(withCheckpoint), now: reopenedAt)
            let full = try await LogOutboxStore.open(
                root: root, partition: "p", configuration: Self.configuration(withoutCheckpoint), now: reopenedAt)
            let context = "after \(steps), \(kill ? "killed" : "closed")"
            #expect(try await fast.entries(matching: .all) == full.entries(matching: .all), "\(context)")
            if fast.core.loadedFrom == .checkpoint { await usedCheckpoint.increment() }
            #expect(full.core.loadedFrom == .everyEntry)
            #expect(try await fast.summary() == full.summary(), "\(context)")
            for later in [0.0, 40, 3600] {
                let at = reopenedAt.addingTimeInterval(later)
                #expect(try await fast.dueIDs(at: at) == full.dueIDs(at: at), "due +\(later)s \(context)")
            }
            for id in known {
                #expect(try await fast.completion(of: id) == full.completion(of: id), "completion of \(id) \(context)")
                #expect(try await fast.dependents(of: id) == full.dependents(of: id), "dependents of \(id) \(context)")
            }
            // Duplicates, app keys and coalescing answer alike.
            for (offset, id) in known.enumerated() {
                let again = OutboxEnqueueRequest(
                    id: id, idempotencyKey: offset % 3 == 0 ? "key-\(offset % 2)" : nil, type: "t0", method: "POST",
                    endpoint: "/again", payload: [], coalescingKey: offset % 2 == 0 ? "c\(offset % 2)" : nil, createdAt: reopenedAt)
                #expect(Self.outcome(try? await fast.enqueue(again)) == Self.outcome(try? await full.enqueue(again)), "\(context)")
            }
            try await fast.close()
            try await full.close()
        }
        #expect(await usedCheckpoint.value > modelCases(30) / 3, "few cases reopened from a checkpoint")
    }

    static func outcome(_ result: OutboxEnqueueResult?) -> String {
        switch result {
        case .enqueued(let entry): "enqueued \(entry.id) \(entry.status)"
        case .coalesced(let entry, let replaced): "coalesced \(entry.id) \(replaced)"
        case .duplicate(let id, let status): "duplicate \(id) \(status)"
        case nil: "failed"
        }
    }
}

private actor Counter {
    private(set) var value = 0
    func increment() { value += 1 }
}
