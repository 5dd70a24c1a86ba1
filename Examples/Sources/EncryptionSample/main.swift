import Foundation
import Outbox

// Once per user: a new random 256-bit key. Keep it in the Keychain, never beside the queue.
let key = OutboxStoreConfiguration.newEncryptionKey()

var configuration = OutboxStoreConfiguration()
try configuration.setEncryptionKey(key)          // 32 raw bytes: no `import Crypto` needed

let root = FileManager.default.temporaryDirectory.appendingPathComponent("sealed-outbox")
let store = try await LogOutboxStore.open(root: root, partition: "user-42", configuration: configuration)
try await store.close()                          // reopening needs the same key: `.wrongKey` otherwise
try await LogOutboxStore.purge(root: root, partition: "user-42")     // at logout: the queue, then its key
