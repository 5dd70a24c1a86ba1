import Foundation
import Outbox

struct UploadPhoto: OutboxAction {
    static let type = "upload_photo"
    let album: String
    let jpeg: [UInt8]
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album)/photos" }
    var headers: [String: String] { ["Content-Type": "image/jpeg"] }
    func payload() throws -> [UInt8] { jpeg }
}

let root = FileManager.default.temporaryDirectory.appendingPathComponent("large-payload-sample-\(UUID().uuidString)")
var configuration = OutboxStoreConfiguration()
configuration.largePayloadThreshold = 1 << 20          // bodies above 1 MiB go to a file beside the log (the default)
let store = try await LogOutboxStore.open(root: root, partition: "user-42", configuration: configuration)

// A handler streams a file-backed body chunk by chunk (HTTPOutboxHandler does this for you):
// each chunk is read off the cooperative pool and checked; a damaged file throws, never sends.
let server = ClosureOutboxHandler { delivery in
    guard let large = delivery.largePayload else { return .delivered(serverID: "small") }
    var reader = large.makeChunkReader(chunkBytes: 256 << 10)
    var sent = 0
    while let chunk = try await reader.next() { sent += chunk.count }   // write each chunk to the request body
    print("\(delivery.method) \(delivery.endpoint): streamed \(sent) of \(large.count) bytes")
    return .delivered(serverID: "ph-1")
}
let dispatcher = OutboxDispatcher(store: store, handlers: [:], fallback: server)
await dispatcher.start()

// 8 MB: more than a log record holds. The file is written and synced before the entry that
// references it, and deleted once the entry has ended.
let photo = [UInt8](repeating: 0xFF, count: 8 << 20)
let result = try await dispatcher.enqueue(UploadPhoto(album: "alb-1", jpeg: photo))
let serverID = try await dispatcher.waitUntilDelivered(result.id)
print("delivered as \(serverID ?? "-")")
await dispatcher.stop()
try await store.close()
try? FileManager.default.removeItem(at: root)
