import Foundation
import Outbox

// Once per root (one key seals every queue under it): a new random 256-bit key.
// Keep it in the Keychain, never beside the queue.
let key = OutboxStoreConfiguration.newEncryptionKey()

var configuration = OutboxStoreConfiguration()
try configuration.setEncryptionKey(key)          // 32 raw bytes: no `import Crypto` needed

let root = FileManager.default.temporaryDirectory.appendingPathComponent("sealed-outbox")
let store = try await LogOutboxStore.open(root: root, partition: "user-42", configuration: configuration)
try await store.close()                          // nothing the app wrote, not even "user-42", is readable on disk

print(try LogOutboxStore.partitions(root: root, configuration: configuration))      // ["user-42"]: only with the key

let newKey = OutboxStoreConfiguration.newEncryptionKey()                             // rotation: crash-safe
try await LogOutboxStore.rekey(root: root, partition: "user-42", configuration: configuration, newKey: newKey)
try configuration.setEncryptionKey(newKey)       // the old key opens nothing any more

try await LogOutboxStore.purge(root: root, partition: "user-42", configuration: configuration)  // at logout: the queue, then its key
