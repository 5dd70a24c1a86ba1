import Foundation
import Outbox

struct Upload: OutboxAction, Encodable {
    static let type = "upload"
    let name: String
    var method: String { "POST" }
    var endpoint: String { "/uploads" }
}

let store = InMemoryOutboxStore(partition: "user-42")
let server = ClosureOutboxHandler { delivery in .delivered(serverID: "up-\(delivery.attempt)") }
let dispatcher = OutboxDispatcher(store: store, handlers: [Upload.type: server])
for name in ["a.jpg", "b.jpg", "c.jpg"] {
    _ = try await store.enqueue(OutboxEnqueueRequest(Upload(name: name)))   // recorded earlier, in the foreground
}

// In a BGProcessingTask (iOS: `OutboxBackgroundDelivery.register` does this) or an
// Android-style worker: deliver what can be delivered in the time the system gives.
// It returns before the deadline with nothing left in flight; cancelling its task
// (the system's expiration handler) records the running attempts and returns at once.
let budget = Date().addingTimeInterval(25)
let work = Task { await dispatcher.drain(until: budget) }
let report = await work.value
let left = try await dispatcher.summary().unsent
print("delivered \(report.delivered), interrupted \(report.interrupted), left \(left)")
await dispatcher.stop()
