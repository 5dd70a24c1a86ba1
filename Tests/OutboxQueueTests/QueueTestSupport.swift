import Foundation
import OutboxLog
import OutboxQueue
import SystemPackage

/// A fresh directory under the system's temporary one, removed by `body`'s end.
func withQueueDirectory<T>(_ body: (FilePath) async throws -> T) async throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-queue-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(FilePath(url.path))
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func text(_ elements: [QueueElement]) -> [String] { elements.map { String(decoding: $0.bytes, as: UTF8.self) } }

/// Reads everything after the consumer's cursor, a page of `page` at a time.
func drain(_ consumer: QueueConsumer, page: Int = 256) async throws -> [QueueElement] {
    var all: [QueueElement] = []
    while true {
        let next = try await consumer.next(max: page)
        if next.isEmpty { return all }
        all += next
    }
}
