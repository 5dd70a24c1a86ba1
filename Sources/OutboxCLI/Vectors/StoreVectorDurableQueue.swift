import Foundation
import OutboxLocking
import OutboxLog
import OutboxQueue
import SystemPackage

/// The durable queue the store's vectors hold (Tests/StoreVectors): a
/// ``DurableQueue`` written through its public API with a fixed clock, then
/// given the engine vectors' deterministic salts. Elements of every shape
/// (text, empty, binary, an atomic batch, JSON), a consumer that committed,
/// one that committed nothing, and one removed (a tombstone).
enum StoreVectorDurableQueue {
    static func files() async throws -> VectorFiles {
        let directory = try VectorLogs.Scratch()
        defer { directory.remove() }
        var configuration = DurableQueue.Configuration()
        configuration.elements = VectorLogs.configuration(segmentSize: 1 << 20)
        configuration.consumers = VectorLogs.configuration(segmentSize: 1 << 20)
        let clock = VectorClock()
        configuration.clock = { clock.next() }
        let queue = try await DurableQueue.open(at: FilePath(directory.path), configuration: configuration)
        let shipper = try await queue.consumer(named: "shipper")
        _ = try await queue.consumer(named: "audit")
        _ = try await queue.consumer(named: "gone")
        try await queue.append(Array("signed-in".utf8), durability: .durable)
        try await queue.append([], durability: .durable)
        try await queue.append([0x00, 0xFF, 0x0A, 0x80], durability: .durable)
        let batchEnd = try await queue.append(contentsOf: [Array("viewed".utf8), Array("bought".utf8)], durability: .durable)
        try await queue.append(encoding: ["event": "paid", "amount": "12.50"], with: VectorClock.encoder, durability: .durable)
        try await shipper.commit(through: batchEnd)
        try await queue.removeConsumer(named: "gone")
        try await queue.close()
        var files = VectorFiles()
        for log in ["elements", "consumers"] {
            for (name, bytes) in VectorLogs.canonical(try VectorLogs.load(directory.path + "/" + log)) where name != "INDEX" {
                files[log + "/" + name] = bytes
            }
        }
        return files
    }
}

/// A clock for the vector: StoreVectorQueue's start, then one second more
/// at every reading.
final class VectorClock: Sendable {
    private let readings = Locked(0)

    func next() -> Date {
        StoreVectorQueue.at(readings.withLock { readings in
            defer { readings += 1 }
            return readings
        })
    }

    /// JSON with its keys in one order, so that the bytes do not vary.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }
}
