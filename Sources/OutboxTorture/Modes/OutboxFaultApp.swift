import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import OutboxReferenceServer

/// The app of the `outboxfault` mode: the writes it owes the server, what
/// each of its enqueues was told, and one life of it on a failing disk.
struct OutboxFaultApp {
    struct Write {
        let id: OutboxEntry.ID
        /// The message text, by which the server's attempt log finds it.
        let tag: String
        var state: OutboxFaultWrite = .owed
        /// An enqueue of it never answered, or failed once the machine was
        /// dead: it may exist, and be delivered, whatever came after.
        var uncertain = false
    }

    /// What one enqueue call was told.
    enum Answer: Sendable {
        case acknowledged(key: String?)  // nil: a duplicate
        /// It failed while the machine was running.
        case refused
        /// It failed because the machine died under it.
        case cut
    }

    var writes: [Write]
    /// Seal the store under this key (an encrypted run).
    var encryptionKey: [UInt8]? = nil

    /// Runs one life; returns the violation it found, if any.
    mutating func live(
        _ plan: OutboxFaultPlan, durabilities: OutboxFaultTorture.Durabilities, on disk: SimulatedFileSystem,
        server: ReferenceServer, random: inout SplitMix64, report: inout TortureReport
    ) async -> String? {
        let wrapper = CrashingFileSystem(base: disk, crashAt: plan.powerLossAtCall)
        var (storeConfiguration, dispatching, handler) = OutboxFaultTorture.configurations(
            fileSystem: wrapper, baseURL: server.baseURL, durabilities: durabilities)
        if let encryptionKey { try? storeConfiguration.setEncryptionKey(encryptionKey) }
        report.detail(.outboxfault, "lives")
        let syncFaultsBefore = disk.faults.injectedFaults.count
        defer {
            if !plan.isLast {
                wrapper.crash()
                disk.faults.removeAllRules()
                disk.simulatePowerLoss(plan.powerLoss, seed: plan.powerLossSeed)
            }
        }

        let store: LogOutboxStore
        do {
            store = try await LogOutboxStore.open(
                root: OutboxFaultTorture.root, partition: OutboxFaultTorture.partition, configuration: storeConfiguration)
        } catch where wrapper.hasCrashed {
            report.detail(.outboxfault, "power losses during the open")
            countPowerLoss(plan, report: &report)
            return nil
        } catch {
            return "the open failed: \(error)"
        }
        if let call = plan.failingSync {
            _ = disk.faults.install(
                FaultRule(failing: .synchronize, trigger: .call(call), repetition: plan.syncFailsFromThenOn ? .always : .once))
        }
        let dispatcher = OutboxDispatcher(store: store, handlers: [:], fallback: handler, configuration: dispatching)
        await dispatcher.start()

        let answers = await enqueueOwed(through: dispatcher, crash: wrapper)
        let drained = await drain(store, dispatcher, for: plan.isLast ? .seconds(120) : .milliseconds(1500))
        let (ending, attempts) = await end(plan, store, dispatcher, drained: drained, crash: wrapper, server: server)

        let syncFaults = disk.faults.injectedFaults.count - syncFaultsBefore
        report.count(.outboxfault) { $0.faults += syncFaults }
        report.detail(.outboxfault, "syncs failed", syncFaults)
        if !plan.isLast { countPowerLoss(plan, mid: wrapper.hasCrashed && plan.powerLossAtCall != nil, report: &report) }
        let answered = record(answers, plan, attempts: attempts, random: &random, report: &report)
        return ending ?? answered
    }

    /// The end of the life: the machine dies (unless this is the last
    /// life); running attempts end; the server answers what it holds.
    /// Returns what went wrong, if anything, and the server's attempts then.
    private func end(
        _ plan: OutboxFaultPlan, _ store: LogOutboxStore, _ dispatcher: OutboxDispatcher, drained: Bool,
        crash wrapper: CrashingFileSystem, server: ReferenceServer
    ) async -> (String?, AttemptLog) {
        if !plan.isLast { wrapper.crash() }
        await dispatcher.stop()
        await server.waitForActivity { $0.writesInFlight == 0 }
        let attempts = server.attempts
        var problem: String?
        do { try await store.close() } catch where !plan.isLast {
            // The disk is gone: closing cannot sync.
        } catch {
            problem = "closing after the drain failed: \(error)"
        }
        if plan.isLast && !drained { problem = problem ?? "the last life, without faults, did not drain its queue" }
        return (problem, attempts)
    }

    /// Records what each enqueue was told; returns the first problem: a
    /// write acknowledged under another key, refused with no fault, or
    /// refused yet received by the server. A refused write is given up or
    /// enqueued again later, as drawn.
    private mutating func record(
        _ answers: [(Int, Answer)], _ plan: OutboxFaultPlan, attempts: AttemptLog, random: inout SplitMix64,
        report: inout TortureReport
    ) -> String? {
        var problem: String?
        for (index, answer) in answers {
            switch answer {
            case .acknowledged(let key):
                writes[index].state = .acknowledged
                report.count(.outboxfault) { $0.acknowledged += 1 }
                if key == nil { report.detail(.outboxfault, "enqueued again: duplicates") }
                let derived = OutboxEntry.derivedIdempotencyKey(partition: OutboxFaultTorture.partition, id: writes[index].id)
                if let key, key != derived { problem = problem ?? "write \(index) was acknowledged with key \(key), not \(derived)" }
            case .refused:
                if plan.isLast { problem = problem ?? "write \(index)'s enqueue failed with no fault injected" }
                report.detail(.outboxfault, "enqueues refused, the machine running")
                // Told it failed: nothing of it may have reached the server
                // (unless an earlier enqueue of it had no answer).
                let received = attempts.keys(forRequestsContaining: "\"text\":\"\(writes[index].tag)\"")
                if !writes[index].uncertain && !received.isEmpty {
                    problem = problem ?? "write \(index)'s enqueue failed, yet the server received it: \(received)"
                }
                if random.nextBool() {
                    writes[index].state = .abandoned
                    report.detail(.outboxfault, "refused writes given up")
                } else {
                    report.detail(.outboxfault, "refused writes enqueued again later")
                }
            case .cut:
                writes[index].uncertain = true
                report.detail(.outboxfault, "enqueues cut by a power loss")
            }
        }
        return problem
    }

    private func countPowerLoss(_ plan: OutboxFaultPlan, mid: Bool = true, report: inout TortureReport) {
        report.count(.outboxfault) { $0.faults += 1 }
        report.detail(.outboxfault, "power losses (\(plan.powerLoss))")
        if mid { report.detail(.outboxfault, "power losses mid-life") }
    }

    /// Two producers enqueue every write still owed, in turns.
    private func enqueueOwed(through dispatcher: OutboxDispatcher, crash: CrashingFileSystem) async -> [(Int, Answer)] {
        let owed = writes.indices.filter { writes[$0].state == .owed }.map { ($0, writes[$0].id, writes[$0].tag) }
        return await withTaskGroup(of: [(Int, Answer)].self) { group in
            for producer in 0..<2 {
                let mine = owed.enumerated().filter { $0.offset % 2 == producer }.map(\.element)
                group.addTask {
                    var answers: [(Int, Answer)] = []
                    for (index, id, tag) in mine {
                        let message = OutboxWorker.Message(conversation: "conversation-\(index % 5)", text: tag)
                        do {
                            switch try await dispatcher.enqueue(message, id: id) {
                            case .enqueued(let entry), .coalesced(let entry, _): answers.append((index, .acknowledged(key: entry.idempotencyKey)))
                            case .duplicate: answers.append((index, .acknowledged(key: nil)))
                            }
                        } catch {
                            answers.append((index, crash.hasCrashed ? .cut : .refused))
                        }
                    }
                    return answers
                }
            }
            var all: [(Int, Answer)] = []
            for await answers in group { all += answers }
            return all
        }
    }

    /// Drains until nothing is left to send, the store fails (a failed sync
    /// or a dead disk make it refuse everything), or `limit` has passed.
    /// Returns whether everything was sent.
    private func drain(_ store: LogOutboxStore, _ dispatcher: OutboxDispatcher, for limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            await dispatcher.flush()
            let unsent: Int
            do { unsent = try await store.summary().unsent } catch { return false }
            if unsent == 0 { return true }
            let next = (try? await store.nextDueDate()) ?? Date()
            let wait = min(max(0, next.timeIntervalSinceNow), 0.02)
            try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
        }
        return false
    }

    /// The server's records against what the app was told; the violation,
    /// if any.
    func check(against server: ReferenceServer, report: inout TortureReport) -> String? {
        let ledger = server.ledger
        let attempts = server.attempts
        if ledger.appliedWithoutKey > 0 { return "\(ledger.appliedWithoutKey) write(s) applied without a key" }
        for (index, write) in writes.enumerated() {
            let received = attempts.keys(forRequestsContaining: "\"text\":\"\(write.tag)\"")
            let derived = OutboxEntry.derivedIdempotencyKey(partition: OutboxFaultTorture.partition, id: write.id)
            if received.count > 1 || received.keys.contains(where: { $0 != derived }) {
                return "write \(index) was sent with keys \(received.sorted { $0.key < $1.key }), not only \(derived)"
            }
            let applied = ledger.applied[derived] ?? 0
            report.count(.outboxfault) { $0.recovered += applied }
            switch write.state {
            case .acknowledged where applied != 1:
                return "write \(index) was acknowledged and applied \(applied) times (received \(received.values.reduce(0, +)))"
            case .abandoned where !write.uncertain && !received.isEmpty:
                return "write \(index)'s enqueue failed and the app gave it up, yet the server received it \(received.values.reduce(0, +)) times"
            case .abandoned where applied > 1:
                return "write \(index) was applied \(applied) times"
            case .owed:
                return "write \(index) is still owed after the last life"
            default:
                if applied > 0 && received.values.reduce(0, +) > 1 { report.detail(.outboxfault, "writes retried with their key") }
            }
        }
        return nil
    }
}
