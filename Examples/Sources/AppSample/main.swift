import Foundation
import Outbox
import OutboxHTTP

struct SendMessage: OutboxAction, Encodable {
    static let type = "send_message"
    let conversationID: String
    let body: String
    var method: String { "POST" }
    var endpoint: String { "/conversations/\(conversationID)/messages" }
    var scope: String? { "conversation:\(conversationID)" }    // in order, per conversation
}

// Application Support on Apple platforms, $XDG_DATA_HOME (~/.local/share) on Linux;
// missing directories are created (mode 0700).
let outboxRoot = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
    .appendingPathComponent("outbox")
let api = URL(string: ProcessInfo.processInfo.environment["OUTBOX_API"] ?? "http://127.0.0.1:8080")!  // `outbox serve`

let store = try await LogOutboxStore.open(root: outboxRoot, partition: "user-42")   // one queue per user
let dispatcher = OutboxDispatcher(
    store: store, handlers: [:],
    fallback: HTTPOutboxHandler(baseURL: api))   // add `tokenProvider:` to send `Authorization: Bearer …`

#if canImport(Network)
let connectivity = NetworkPathMonitor()          // Apple platforms: NWPathMonitor
#else
let connectivity = ManualConnectivityMonitor()   // elsewhere: call setOnline(_:) when it changes
#endif

await dispatcher.start(connectivity: connectivity)   // cold start, connectivity, retry timers

let sent = try await dispatcher.enqueue(SendMessage(conversationID: "c1", body: "hi"))   // the commit point
// In the app: scenePhase == .active → await dispatcher.appDidBecomeActive()
//             scenePhase == .background → OutboxBackgroundDelivery.schedule(identifier:) (iOS)

let badge = Task {                               // a pending-writes badge
    for try await queue in dispatcher.queueUpdates() where queue.summary.unsent > 0 {
        print("unsent: \(queue.summary.unsent)")
    }
}
do {
    let serverID = try await dispatcher.waitUntilDelivered(sent.id)   // offline, 503, no server…: retried
    print("delivered as \(serverID ?? "?")")
} catch let failure as OutboxDeliveryFailure {   // the server refused it: show the user
    print("not sent: \(failure)")
}
badge.cancel()
print("still unsent:", try await dispatcher.summary().unsent)

await dispatcher.flush()      // send what else is due, e.g. before the app is suspended
await dispatcher.stop()       // timers, connectivity and event streams end
try await store.close()       // syncs and releases the queue's files
