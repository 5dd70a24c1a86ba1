import Foundation
import Logging
import Outbox
import OutboxHTTP
import SystemPackage

/// What the app workers of the outbox and payload modes share: the open
/// and the dispatcher that start a life, how an enqueue's answer is
/// reported to the parent, and the drain that ends a life that was not
/// killed.
enum WorkerApp {
    /// Opens the app's queue; a failure is reported to the parent (then
    /// return ``LogWorker/Status/openFailed``).
    static func open(root: FilePath, partition: String, configuration: OutboxStoreConfiguration) async -> LogOutboxStore? {
        do {
            return try await LogOutboxStore.open(root: root, partition: partition, configuration: configuration)
        } catch {
            WorkerLine.openFailed(code: WorkerLine.word(error.code), message: error.description).send()
            return nil
        }
    }

    /// The app's dispatcher: HTTP to `baseURL`, `concurrentDeliveries` at
    /// once, quick retries (5 ms to 100 ms), entries never too old to send.
    static func dispatcher(
        for store: LogOutboxStore, baseURL: URL, logger: Logger, concurrentDeliveries: Int, requestTimeout: Duration,
        deliveryTimeout: Duration
    ) -> OutboxDispatcher {
        var http = HTTPOutboxHandler.Configuration(baseURL: baseURL)
        http.requestTimeout = requestTimeout
        var dispatching = OutboxDispatcherConfiguration()
        dispatching.maximumConcurrentDeliveries = concurrentDeliveries
        dispatching.backoff = OutboxBackoff(base: .milliseconds(5), cap: .milliseconds(100))
        dispatching.deliveryTimeout = deliveryTimeout
        dispatching.maximumAge = nil
        dispatching.logger = logger
        return OutboxDispatcher(
            store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: dispatching)
    }

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
