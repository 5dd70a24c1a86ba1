import OutboxLog

let log = try await OutboxLog.open(at: "data/queue")     // created, with its parents, if missing
print(log.recoveryReport)                                // what the open found and repaired

let order = Array(#"{"item":"book","quantity":1}"#.utf8)
try await log.put("order-42", order, durability: .durable)                       // survives power loss
try await log.append([.tombstone("order-41"), .value("receipt-41", Array("paid".utf8))],
                     durability: .durable)                                       // atomic batch
try await log.annotate("order-42", [1], durability: .written)                    // small side record: attempts

if let entry = try await log.get("order-42") {          // value + annotation, CRC-verified
    print(String(decoding: entry.value, as: UTF8.self), entry.annotation?.payload ?? [])
}
for try await entry in log.allEntries() {                // live entries in sequence order
    print(entry.sequence, entry.key)
}
try await log.close()                                    // syncs everything
