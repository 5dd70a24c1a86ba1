import Foundation
import Outbox

// 1. An action: what the user did, as a server-bound write.
struct SendMessage: OutboxAction, Codable {
    static let type = "send_message"
    let conversationID: String
    let body: String
    var method: String { "POST" }
    var endpoint: String { "/conversations/\(conversationID)/messages" }
}

// 2. A store (in memory here, as in a unit test; `LogOutboxStore.open(root:partition:)` in the app)
//    and a handler per action type (`HTTPOutboxHandler` in the app; a stand-in server here).
let store = InMemoryOutboxStore(partition: "user-42")
var handlers = OutboxHandlers()
handlers.on(SendMessage.self) { message, delivery in
    print("server got \"\(message.body)\" with key \(delivery.idempotencyKey)")
    return .delivered(serverID: "msg-1")
}
let dispatcher = OutboxDispatcher(store: store, handlers: handlers)

// 3. Enqueue: the commit point. From here on the write survives kills and reboots.
let sent = try await dispatcher.enqueue(SendMessage(conversationID: "c1", body: "hi"))

// 4. Observe: wait for this write, or watch the whole queue.
let serverID = try await dispatcher.waitUntilDelivered(sent.id)
print("delivered as \(serverID ?? "?")")
let queue = try await dispatcher.queueState()
print("unsent: \(queue.summary.unsent), idle: \(queue.isIdle)")

await dispatcher.stop()
try await store.close()
