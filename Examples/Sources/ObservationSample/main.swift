import Foundation
import Outbox

struct Like: OutboxAction, Encodable {
    static let type = "like"
    let post: String
    var method: String { "PUT" }
    var endpoint: String { "/posts/\(post)/like" }
}

let store = InMemoryOutboxStore(partition: "user-42")
let server = ClosureOutboxHandler { delivery in
    delivery.entry.lastFailure == nil
        ? .transient(reason: "HTTP 503", httpStatus: 503, retryAfter: .seconds(1))   // busy: retried, not counted
        : .delivered(serverID: "like-1")
}
let dispatcher = OutboxDispatcher(store: store, handlers: [Like.type: server])

// A pending-writes badge: the queue's state now, then whenever it changes.
let badge = Task {
    for try await state in dispatcher.queueUpdates() {
        print("badge: \(state.summary.unsent) unsent\(state.isIdle ? ", idle" : "")")
        if state.summary.unsent == 0 && state.isIdle { break }
    }
}

let liked = try await dispatcher.enqueue(Like(post: "p1"))
// One row of the UI: this entry's state as it changes, until it is delivered.
for try await state in dispatcher.updates(of: liked.id) {
    switch state.status {
    case .waitingToRetry: print("row: will retry at \(state.nextAttemptAt!): \(state.lastFailure.map(String.init(describing:)) ?? "")")
    case .succeeded: print("row: sent as \(state.serverID ?? "?")")
    default: print("row: \(state.status)")
    }
}
try await badge.value

// Firestore's waitForPendingWrites(): everything unsent now, delivered or set aside.
let pending = try await dispatcher.waitForPendingWrites()
print("pending writes settled: \(pending.delivered.count) delivered, \(pending.notDelivered.count) not")
await dispatcher.stop()
