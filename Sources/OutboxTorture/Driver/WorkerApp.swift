import Foundation
import Outbox

/// What the app workers of the outbox and payload modes share: how an
/// enqueue's answer is reported to the parent, and the drain that ends a
/// life that was not killed.
enum WorkerApp {
    /// Reports an acknowledged enqueue of entry `id` with its key (`-` for
    /// a duplicate, recorded in an earlier life).
    static func sendEnqueued(_ result: OutboxEnqueueResult, id: String) {
        switch result {
        case .enqueued(let entry), .coalesced(let entry, _):
            WorkerLine.enqueued(id: id, key: entry.idempotencyKey).send()
        case .duplicate:
            WorkerLine.enqueued(id: id, key: "-").send()
        }
    }

    /// Drains: retries come due on the dispatcher's timer; flush as well,
    /// and look again at least every 20 ms. Then stops and closes, and
    /// reports `drained`; a failure is reported as step `failingStep`.
    /// Returns the exit status.
    static func drain(_ store: LogOutboxStore, _ dispatcher: OutboxDispatcher, failingStep: Int) async -> Int32 {
        do {
            while true {
                await dispatcher.flush()
                if try await store.summary().unsent == 0 { break }
                let next = try await store.nextDueDate() ?? Date()
                let wait = min(max(0, next.timeIntervalSinceNow), 0.02)
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
            }
            await dispatcher.stop()
            try await store.close()
        } catch {
            WorkerLine.fail(failingStep, code: "outbox", message: "\(error)").send()
            return LogWorker.Status.stepFailed
        }
        WorkerLine.drained.send()
        return LogWorker.Status.done
    }
}
