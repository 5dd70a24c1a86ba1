import Foundation
import Outbox
import OutboxLog
import SystemPackage

/// The workloads every benchmark and the comparison share.
public enum Workload {
    /// The partition (user) every benchmark store uses.
    public static let partition = "bench-user"

    /// A JSON object of exactly `size` bytes (`{"body":"xxx…"}`), like a
    /// small message an app sends. Sizes below 12 bytes are plain bytes.
    public static func jsonPayload(size: Int, seed: Int = 0) -> [UInt8] {
        let prefix = Array(#"{"body":""#.utf8)
        let suffix = Array(#""}"#.utf8)
        guard size >= prefix.count + suffix.count + 1 else { return [UInt8](repeating: UInt8(ascii: "x"), count: size) }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789 ".utf8)
        var body: [UInt8] = []
        body.reserveCapacity(size)
        body += prefix
        var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        while body.count < size - suffix.count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            body.append(alphabet[Int((state >> 33) % UInt64(alphabet.count))])
        }
        body += suffix
        return body
    }

    /// The enqueue request of one message with a `payloadSize`-byte body.
    public static func request(payload: [UInt8], id: OutboxEntry.ID = OutboxEntry.ID()) -> OutboxEnqueueRequest {
        OutboxEnqueueRequest(
            id: id, type: "send_message", method: "POST", endpoint: "/conversations/c1/messages",
            payload: payload, headers: ["Content-Type": "application/json"])
    }

    /// The store configuration used for `ours` in the side-by-side
    /// comparisons: durable enqueue, written attempt start, and every
    /// outcome — success included — at `outcome` (so a `durable` run syncs
    /// each acknowledgement, like SQLite with synchronous=FULL).
    public static func storeConfiguration(
        enqueue: Durability = .durable, attempt: Durability = .written, outcome: Durability = .durable
    ) -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.unscopedDelivery = .concurrent  // independent writes, drained concurrently
        configuration.enqueueDurability = enqueue
        configuration.attemptDurability = attempt
        configuration.outcomeDurability = outcome
        configuration.successDurability = outcome
        return configuration
    }

    /// A lease long enough never to expire during a benchmark.
    public static let lease: Duration = .seconds(300)

    /// Acknowledges a delivered entry the way the dispatcher does: the
    /// attempt starts (`written` by default), then the success is recorded
    /// (its tombstone and completion in one atomic batch).
    public static func acknowledge(_ id: OutboxEntry.ID, in store: some OutboxStore, serverID: String? = nil) async throws {
        let now = Date()
        _ = try await store.beginAttempt(id, at: now, lease: lease)
        try await store.recordSuccess(id, serverID: serverID, at: now)
    }

    /// Fills the store under `root` with `count` pending entries, from
    /// `producers` concurrent producers, enqueued `buffered` and synced by
    /// the close. Returns the time it took, in seconds.
    @discardableResult
    public static func preloadStore(root: FilePath, count: Int, payloadSize: Int = 256, producers: Int = 16) async throws
        -> Double
    {
        let start = monotonicNanoseconds()
        let store = try await LogOutboxStore.open(
            root: root, partition: partition, configuration: storeConfiguration(enqueue: .buffered))
        let payload = jsonPayload(size: payloadSize)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                let share = count / producers + (producer < count % producers ? 1 : 0)
                group.addTask {
                    for _ in 0..<share { _ = try await store.enqueue(request(payload: payload)) }
                }
            }
            try await group.waitForAll()
        }
        try await store.close()
        return Double(monotonicNanoseconds() - start) / 1e9
    }

    /// The 17-byte key the store would give entry number `index` ("E" + 16 bytes).
    public static func entryKey(_ index: Int) -> LogKey {
        var bytes = [UInt8](repeating: 0, count: 17)
        bytes[0] = 0x45
        withUnsafeBytes(of: UInt64(index).littleEndian) { raw in for i in 0..<8 { bytes[1 + i] = raw[i] } }
        withUnsafeBytes(of: (UInt64(index) &* 0x9E37_79B9_7F4A_7C15).littleEndian) { raw in
            for i in 0..<8 { bytes[9 + i] = raw[i] }
        }
        return LogKey(bytes)
    }

    /// Writes a log of `count` live records (`payloadSize`-byte values) in
    /// `directory`, one `buffered` put each, then closes it (which syncs).
    public static func makeLog(
        at directory: FilePath, count: Int, payloadSize: Int = 256,
        configuration: OutboxLog.Configuration = OutboxLog.Configuration()
    ) async throws {
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        let payload = jsonPayload(size: payloadSize)
        for index in 0..<count { try await log.put(entryKey(index), payload, durability: .buffered) }
        try await log.close()
    }
}
