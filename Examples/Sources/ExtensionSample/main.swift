import Foundation
import Outbox

// An app and its extension, one outbox. On iOS both find the root in their
// App Group's container:
//   FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.app")
// Here a temporary directory stands in for it, and both sides run in one process.
let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-extension-sample-\(UUID())")
let user = "alice"

struct LikePhoto: OutboxAction, Encodable {
    static let type = "like_photo"
    let photoID: Int
    var method: String { "POST" }
    var endpoint: String { "/photos/\(photoID)/likes" }
}

/// The extension: enqueue, and return. It never opens the queue for long and never drains.
func likeFromExtension(_ photoID: Int) async throws -> OutboxSharedEnqueueResult {
    let request = try OutboxEnqueueRequest(LikePhoto(photoID: photoID))
    return try await LogOutboxStore.enqueue([request], root: root, partition: user)
}

// Before the app runs, the extension's write goes straight into the queue.
print("app not running:", try await likeFromExtension(1).path)  // direct

// The app holds the queue open and watches for spools (then flushes its
// dispatcher: `await dispatcher.flush()` in `onIngested`).
let store = try await LogOutboxStore.open(root: root, partition: user)
let watch = store.watchSpools(pollInterval: .milliseconds(50)) { report in
    print("moved in from spools:", report.ingested)
}

// While it does, the extension's write goes into a spool of its own.
guard case .spooled(let spooled) = try await likeFromExtension(2) else { fatalError("expected a spooled write") }
print("app running:", "spooled", spooled[0].id, "key", spooled[0].idempotencyKey)

// The app moves it in (at once when poked; this waits for the watch).
while try await store.entry(spooled[0].id) == nil { try await Task.sleep(for: .milliseconds(20)) }
print("in the app's queue:", try await store.summary().unsent, "entries to send")
watch.cancel()
try await store.close()
try? FileManager.default.removeItem(at: root)
