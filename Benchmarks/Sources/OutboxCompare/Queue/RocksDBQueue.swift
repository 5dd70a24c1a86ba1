import Foundation
import Synchronization

/// RocksDB as a FIFO queue, the way applications use it as one: keys are
/// 8-byte big-endian sequence numbers (so they sort in produce order),
/// values are the elements; `produce` is one put, `take` reads a run of keys
/// with an iterator and removes it with one range deletion. The row's
/// durability is the write options' `sync` (1: fsync'ed WAL, survives power
/// loss; 0: WAL in the page cache, survives an app kill).
///
/// Producers put concurrently, so key k + 1 can be visible before key k;
/// consumers only claim keys below the watermark under which every put has
/// returned, so none is ever skipped.
final class RocksDBQueue: BlockingQueue {
    let name: String
    private let library: Library
    private let handles: Handles
    private let state = Mutex(State())

    /// The C objects this queue owns. Sharing them across threads is safe:
    /// RocksDB documents a DB as usable from many threads at once without
    /// locking, and the option objects are only read after they are set up
    /// here. Only `close()` frees them, once.
    private struct Handles: @unchecked Sendable {
        let db: OpaquePointer
        let options: OpaquePointer
        /// The row's durability: produce and take.
        let writeOptions: OpaquePointer
        /// `sync = 0`: fill, which is before the clock and needs no durability.
        let fillOptions: OpaquePointer
        let readOptions: OpaquePointer
    }

    /// Opens (creating) the database at `directory/db`.
    init(directory: String, durability: QueueDurability, library: Library) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let version = RocksDBBench.version.isEmpty ? library.version : RocksDBBench.version
        name = (version.isEmpty ? "RocksDB" : "RocksDB \(version)") + " sync=\(durability == .durable ? 1 : 0)"
        self.library = library
        let options = try library.made("options", library.optionsCreate)
        library.optionsSetCreateIfMissing(options, 1)
        let db: OpaquePointer?
        do {
            db = try library.checked("open \(directory)/db") { library.open(options, directory + "/db", $0) }
        } catch {
            library.optionsDestroy(options)
            throw error
        }
        guard let db else {
            library.optionsDestroy(options)
            throw Failure(description: "RocksDB open \(directory)/db returned no database")
        }
        let writeOptions = try library.made("write options", library.writeOptionsCreate)
        library.writeOptionsSetSync(writeOptions, durability == .durable ? 1 : 0)
        let fillOptions = try library.made("write options", library.writeOptionsCreate)
        library.writeOptionsSetSync(fillOptions, 0)
        handles = Handles(
            db: db, options: options, writeOptions: writeOptions, fillOptions: fillOptions,
            readOptions: try library.made("read options", library.readOptionsCreate))
    }

    deinit {
        try? close()
    }

    /// One put, outside the lock: concurrent puts are what RocksDB's group
    /// commit joins into one WAL write (and one sync).
    func produce(_ element: [UInt8]) throws {
        let keys = try state.withLock { try $0.reserve(1) }
        do {
            try withKey(keys.lowerBound) { key in
                try withBytes(element, orElse: key) { value, count in
                    try library.checked("put") { library.put(handles.db, handles.writeOptions, key, 8, value, count, $0) }
                }
            }
        } catch {
            state.withLock { $0.finish(keys, written: false) }
            throw error
        }
        state.withLock { $0.finish(keys, written: true) }
    }

    /// Claims a run of keys under the lock, then reads and removes it
    /// outside it. A failure after the claim loses that run (the row fails).
    func take(max: Int) throws -> [[UInt8]] {
        guard max > 0, let claim = try state.withLock({ try $0.claim(max) }) else { return [] }
        let values = try read(claim)
        guard let batch = library.batchCreate() else { throw Failure(description: "RocksDB could not create a batch") }
        defer { library.batchDestroy(batch) }
        withKey(claim.keys.lowerBound) { first in
            withKey(claim.keys.upperBound) { end in library.batchDeleteRange(batch, first, 8, end, 8) }
        }
        try library.checked("delete_range") { library.write(handles.db, handles.writeOptions, batch, $0) }
        return values
    }

    /// Appends in batches of 1,000 puts, unsynced.
    func fill(_ elements: [[UInt8]]) throws {
        let keys = try state.withLock { try $0.reserve(elements.count) }
        var written = keys.lowerBound
        defer {
            state.withLock {
                $0.finish(keys.lowerBound..<written, written: true)
                $0.finish(written..<keys.upperBound, written: false)
            }
        }
        for start in stride(from: 0, to: elements.count, by: 1_000) {
            let chunk = elements[start..<min(start + 1_000, elements.count)]
            guard let batch = library.batchCreate() else { throw Failure(description: "RocksDB could not create a batch") }
            defer { library.batchDestroy(batch) }
            for (offset, element) in chunk.enumerated() {
                withKey(written + UInt64(offset)) { key in
                    withBytes(element, orElse: key) { value, count in library.batchPut(batch, key, 8, value, count) }
                }
            }
            try library.checked("write") { library.write(handles.db, handles.fillOptions, batch, $0) }
            written += UInt64(chunk.count)
        }
    }

    /// Frees the C objects and closes the database; later calls do nothing.
    /// The harness calls it once no produce or take is running.
    func close() throws {
        let wasOpen = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard wasOpen else { return }
        library.close(handles.db)
        library.writeOptionsDestroy(handles.writeOptions)
        library.writeOptionsDestroy(handles.fillOptions)
        library.readOptionsDestroy(handles.readOptions)
        library.optionsDestroy(handles.options)
    }

    /// The claimed values, oldest first, from one iterator (not shared:
    /// RocksDB iterators are not thread-safe). Throws rather than return a
    /// wrong element if a key is not the one expected.
    private func read(_ claim: Claim) throws -> [[UInt8]] {
        guard let iterator = library.createIterator(handles.db, handles.readOptions) else {
            throw Failure(description: "RocksDB could not create an iterator")
        }
        defer { library.iteratorDestroy(iterator) }
        withKey(claim.keys.lowerBound) { library.iteratorSeek(iterator, $0, 8) }
        var values: [[UInt8]] = []
        values.reserveCapacity(claim.keys.count - claim.lost.count)
        for expected in claim.keys where !claim.lost.contains(expected) {
            guard library.iteratorValid(iterator) != 0 else {
                try library.checked("iterate") { library.iteratorError(iterator, $0) }
                throw Failure(description: "RocksDB queue: key \(expected) is missing")
            }
            var length = 0
            let key = library.iteratorKey(iterator, &length)
            guard length == 8, let key, Self.number(key) == expected else {
                throw Failure(description: "RocksDB queue: expected key \(expected), found another")
            }
            let value = library.iteratorValue(iterator, &length)
            values.append(value.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? [])
            library.iteratorNext(iterator)
        }
        return values
    }

    /// `number` as the 8 big-endian bytes that sort like it.
    private func withKey<Result>(_ number: UInt64, _ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try withUnsafeBytes(of: number.bigEndian) { try body($0.bindMemory(to: CChar.self).baseAddress!) }
    }

    /// The key's number back from its 8 bytes.
    private static func number(_ key: UnsafePointer<CChar>) -> UInt64 {
        UInt64(bigEndian: UnsafeRawPointer(key).loadUnaligned(as: UInt64.self))
    }

    /// `bytes` as a C pointer and length; `fallback` (any valid pointer)
    /// when empty, since RocksDB wants no NULL even for zero bytes.
    private func withBytes<Result>(
        _ bytes: [UInt8], orElse fallback: UnsafePointer<CChar>, _ body: (UnsafePointer<CChar>, Int) throws -> Result
    ) rethrows -> Result {
        try bytes.withUnsafeBytes { buffer in
            try body(buffer.bindMemory(to: CChar.self).baseAddress ?? fallback, buffer.count)
        }
    }

    /// A run of keys a consumer has claimed, and those in it whose put
    /// failed (they were never written, so the read skips them).
    private struct Claim {
        var keys: Range<UInt64>
        var lost: Set<UInt64>
    }

    /// The counters, under the lock: keys below `published` are all written
    /// (or lost), `finished` holds the written keys above it (few: only
    /// producers' puts still running hold the watermark back), keys below
    /// `head` are claimed.
    private struct State {
        var next: UInt64 = 0
        var published: UInt64 = 0
        var finished: Set<UInt64> = []
        var lost: Set<UInt64> = []
        var head: UInt64 = 0
        var closed = false

        /// `count` fresh keys, in order.
        mutating func reserve(_ count: Int) throws -> Range<UInt64> {
            guard !closed else { throw Failure(description: "RocksDB queue is closed") }
            defer { next += UInt64(count) }
            return next..<next + UInt64(count)
        }

        /// Records that the puts of `keys` have returned, and moves the
        /// watermark past every key now finished below it.
        mutating func finish(_ keys: Range<UInt64>, written: Bool) {
            if !written { lost.formUnion(keys) }
            if keys.lowerBound == published {
                published = keys.upperBound
            } else {
                finished.formUnion(keys)
            }
            while finished.remove(published) != nil { published += 1 }
        }

        /// Up to `max` published keys from the head; nil if there are none.
        mutating func claim(_ max: Int) throws -> Claim? {
            guard !closed else { throw Failure(description: "RocksDB queue is closed") }
            let end = min(head + UInt64(max), published)
            guard end > head else { return nil }
            let keys = head..<end
            head = end
            let lost: Set<UInt64> = lost.isEmpty ? [] : lost.filter { keys.contains($0) }
            self.lost.subtract(lost)
            return Claim(keys: keys, lost: lost)
        }
    }
}
