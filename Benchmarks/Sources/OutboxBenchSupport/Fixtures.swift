import Foundation
import Outbox
import OutboxLog
import Synchronization

/// Holds what a benchmark's setup made until its teardown: package-benchmark
/// runs setup, the iterations and teardown one after the other, never at once.
public final class FixtureBox<Value>: @unchecked Sendable {
    public var value: Value?
    public init() {}

    public var unwrapped: Value {
        guard let value else { fatalError("the benchmark's setup did not run") }
        return value
    }
}

/// An open `OutboxLog` in a temporary directory, with a counter for fresh keys.
public final class LogFixture: Sendable {
    public let directory: TemporaryDirectory
    public let log: OutboxLog
    private let counter = Atomic<Int>(0)

    public init(directory: TemporaryDirectory, log: OutboxLog) {
        self.directory = directory
        self.log = log
    }

    public static func open(configuration: OutboxLog.Configuration = OutboxLog.Configuration()) async throws -> LogFixture {
        let directory = try TemporaryDirectory(prefix: "outbox-bench-log")
        return LogFixture(directory: directory, log: try await OutboxLog.open(at: directory.filePath, configuration: configuration))
    }

    /// Opens a log holding `keys` 256-byte values under `Workload.entryKey(0..<keys)`,
    /// written `buffered` and then synced (not part of any measurement).
    public static func open(holding keys: Int) async throws -> LogFixture {
        let fixture = try await open()
        let payload = Workload.jsonPayload(size: 256)
        for index in 0..<keys { try await fixture.log.put(Workload.entryKey(index), payload, durability: .buffered) }
        try await fixture.log.sync()
        return fixture
    }

    /// A key no earlier call returned.
    public func nextKey() -> LogKey { Workload.entryKey(counter.add(1, ordering: .relaxed).newValue) }

    /// The next number (for keys written in setup and consumed by iterations).
    public func next() -> Int { counter.add(1, ordering: .relaxed).newValue }

    public func close() async throws {
        try await log.close()
        directory.remove()
    }
}

/// An open `LogOutboxStore` in a temporary directory.
public final class StoreFixture: Sendable {
    public let directory: TemporaryDirectory
    public let store: LogOutboxStore
    /// Ids enqueued by the setup, for iterations that act on existing entries.
    public let prepared: [OutboxEntry.ID]
    private let cursor = Atomic<Int>(0)

    init(directory: TemporaryDirectory, store: LogOutboxStore, prepared: [OutboxEntry.ID]) {
        self.directory = directory
        self.store = store
        self.prepared = prepared
    }

    /// Opens a store with `configuration`, after preloading `depth` pending
    /// entries plus `prepared` more whose ids iterations take with
    /// ``takePrepared()`` (all enqueued `buffered` from 16 producers, then
    /// synced by a close; not part of any measurement).
    public static func open(
        configuration: OutboxStoreConfiguration = OutboxStoreConfiguration(), depth: Int = 0, prepared: Int = 0,
        payloadSize: Int = 256
    ) async throws -> StoreFixture {
        let directory = try TemporaryDirectory(prefix: "outbox-bench-store")
        let ids = (0..<prepared).map { _ in OutboxEntry.ID() }
        if depth + prepared > 0 {
            let loader = try await LogOutboxStore.open(
                root: directory.filePath, partition: Workload.partition,
                configuration: Workload.storeConfiguration(enqueue: .buffered))
            let payload = Workload.jsonPayload(size: payloadSize)
            let next = SharedCounter()
            try await concurrently(total: depth + prepared, producers: 16) {
                let index = next.next() - 1
                let id = index < prepared ? ids[index] : OutboxEntry.ID()
                _ = try await loader.enqueue(Workload.request(payload: payload, id: id))
            }
            try await loader.close()
        }
        let store = try await LogOutboxStore.open(
            root: directory.filePath, partition: Workload.partition, configuration: configuration)
        return StoreFixture(directory: directory, store: store, prepared: ids)
    }

    /// The next prepared entry's id.
    public func takePrepared() -> OutboxEntry.ID {
        let index = cursor.add(1, ordering: .relaxed).newValue - 1
        guard index < prepared.count else { fatalError("benchmark ran more iterations than the setup prepared (\(prepared.count))") }
        return prepared[index]
    }

    public func close() async throws {
        try await store.close()
        directory.remove()
    }
}

/// Runs `total` calls of `operation` from `producers` concurrent tasks.
public func concurrently(
    total: Int, producers: Int, _ operation: @escaping @Sendable () async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for producer in 0..<producers {
            let share = total / producers + (producer < total % producers ? 1 : 0)
            group.addTask { for _ in 0..<share { try await operation() } }
        }
        try await group.waitForAll()
    }
}

/// A flag one task sets and another polls.
public final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    public init() {}
    public var isSet: Bool { value.load(ordering: .relaxed) }
    public func set() { value.store(true, ordering: .relaxed) }
}

/// A counter shared by concurrent tasks.
public final class SharedCounter: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    /// Adds one and returns the new value (1, 2, 3, …).
    public func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}

/// A store directory as a SIGKILL leaves it: `entries` pending entries, the
/// last written by a session that never closed. Made by copying the
/// directory while that session is still open, after its last `written`
/// enqueue returned (every earlier record was written before it): the copy
/// holds exactly what the kernel holds, which is what a killed process
/// leaves behind — no close marker, nothing the close would have written.
public final class KilledStoreImage: Sendable {
    public let image: TemporaryDirectory
    public let entries: Int

    private init(image: TemporaryDirectory, entries: Int) {
        self.image = image
        self.entries = entries
    }

    public static func make(entries: Int) async throws -> KilledStoreImage {
        precondition(entries >= 1)
        let live = try TemporaryDirectory(prefix: "outbox-bench-killed-live")
        defer { live.remove() }
        try await Workload.preloadStore(root: live.filePath, count: entries - 1)
        let store = try await LogOutboxStore.open(
            root: live.filePath, partition: Workload.partition,
            configuration: Workload.storeConfiguration(enqueue: .written))
        _ = try await store.enqueue(Workload.request(payload: Workload.jsonPayload(size: 256)))
        let image = try TemporaryDirectory(prefix: "outbox-bench-killed-image")
        try FileManager.default.copyItem(atPath: live.path, toPath: image.appending("root"))
        try await store.close()
        return KilledStoreImage(image: image, entries: entries)
    }

    /// A fresh copy of the image to open (an open repairs what it finds, so
    /// every open needs its own), as a store root.
    public func freshCopy() throws -> TemporaryDirectory {
        let copy = try TemporaryDirectory(prefix: "outbox-bench-killed-copy")
        try FileManager.default.copyItem(atPath: image.appending("root"), toPath: copy.appending("root"))
        return copy
    }
}
