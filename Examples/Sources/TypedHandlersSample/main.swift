import Foundation
import Outbox

struct Transfer: OutboxAction, Codable {
    static let type = "transfer"
    let from: String
    let to: String
    let cents: Int
    var method: String { "POST" }
    var endpoint: String { "/transfers" }
}

var storeConfiguration = OutboxStoreConfiguration()
storeConfiguration.unscopedDelivery = .inOrder           // the default: unscoped writes go in order
let store = InMemoryOutboxStore(partition: "user-42", configuration: storeConfiguration)

var dispatching = OutboxDispatcherConfiguration()         // the defaults, spelled out:
dispatching.unavailableStatuses = [429, 502, 503, 504]   // "server busy": retried, never counted
dispatching.maximumAge = .seconds(7 * 24 * 3600)          // from the server's first answer

// A handler per action type, given the action itself.
var handlers = OutboxHandlers()
handlers.on(Transfer.self) { transfer, delivery in
    print("transfer \(transfer.cents) from \(transfer.from) to \(transfer.to), key \(delivery.idempotencyKey)")
    return .delivered(serverID: "tr-\(transfer.cents)")
}
let dispatcher = OutboxDispatcher(store: store, handlers: handlers, configuration: dispatching)
let sent = try await dispatcher.enqueue(Transfer(from: "alice", to: "bob", cents: 1250))
print("delivered as \(try await dispatcher.waitUntilDelivered(sent.id) ?? "?")")
await dispatcher.stop()
