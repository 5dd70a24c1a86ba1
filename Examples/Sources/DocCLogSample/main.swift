import OutboxLog

let log = try await OutboxLog.open(at: "queue")
try await log.put("order-42", Array("pending".utf8), durability: .durable)
let entry = try await log.get("order-42")
print(entry.map { String(decoding: $0.value, as: UTF8.self) } ?? "not found")
try await log.close()
