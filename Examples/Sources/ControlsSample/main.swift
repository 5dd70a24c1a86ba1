import Foundation
import Outbox

struct Note: OutboxAction, Encodable {
    static let type = "note"
    let text: String
    var method: String { "POST" }
    var endpoint: String { "/notes" }
}

/// The server's side of the story: it rejects "rejected" until it is fixed.
actor Server {
    var fixed = false
    func fix() { fixed = true }
}

let store = InMemoryOutboxStore(partition: "user-42")
let backend = Server()
let server = ClosureOutboxHandler { delivery in
    let text = String(decoding: delivery.payload, as: UTF8.self)
    if text.contains("rejected"), await !backend.fixed { return .permanent(reason: "HTTP 422", httpStatus: 422) }
    if text.contains("busy") && delivery.attempt == 1 { return .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: .seconds(600)) }
    return .delivered(serverID: nil)
}
var configuration = OutboxDispatcherConfiguration()
configuration.quarantineRetention = .seconds(30 * 24 * 3600)   // quarantined writes kept 30 days, then removed (with an event)
let dispatcher = OutboxDispatcher(store: store, handlers: [Note.type: server], configuration: configuration)

await dispatcher.pause()                                  // nothing is sent until resume()
let busy = try await dispatcher.enqueue(Note(text: "busy"))
try await dispatcher.enqueue(Note(text: "rejected"))
try await dispatcher.enqueue(Note(text: "draft, never mind"))
print("paused: \(await dispatcher.isPaused)")
try await dispatcher.discard { $0.payload == Array(#"{"text":"draft, never mind"}"#.utf8) }
await dispatcher.resume()
try await dispatcher.waitUntilIdle()                      // "busy" waits 10 minutes for its retry…

try await dispatcher.retry(busy.id)                       // …"send now"
_ = try await dispatcher.waitUntilDelivered(busy.id)
try await dispatcher.waitUntilIdle()                      // "rejected" went next: quarantined
await backend.fix()
let retried = try await dispatcher.retryAll()             // the quarantined ones, now that the server is fixed
try await dispatcher.waitUntilIdle()
print("retried \(retried.count); unsent: \(try await dispatcher.summary().unsent)")
await dispatcher.stop()
