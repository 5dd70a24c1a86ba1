import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The physical limit: append `recordSize` bytes with `write(2)`, then (if
/// `sync`) `fdatasync` (`F_FULLFSYNC` on Apple), one record or one group per
/// call, to one file. No framing, no index, no thread hand-off.
public final class RawAppendFile: @unchecked Sendable {
    public let path: String
    public let recordSize: Int
    private let descriptor: Int32
    private var buffer: [UInt8]
    private var size = 0

    public init(path: String, recordSize: Int) throws {
        self.path = path
        self.recordSize = recordSize
        descriptor = open(path, O_CREAT | O_WRONLY | O_APPEND | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw BenchError("open \(path): errno \(errno)") }
        buffer = [UInt8](repeating: 0x5A, count: recordSize)
    }

    /// Appends `records` records with one `write`, then syncs if asked.
    public func append(records: Int = 1, sync: Bool) throws {
        if buffer.count != records * recordSize {
            buffer = [UInt8](repeating: 0x5A, count: records * recordSize)
        }
        let written = buffer.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == buffer.count else { throw BenchError("write: errno \(errno)") }
        if sync { try self.sync() }
        // Keep long write-only runs from filling the disk: start over past 64 MiB.
        size += written
        if size > 64 << 20 {
            guard ftruncate(descriptor, 0) == 0 else { throw BenchError("ftruncate: errno \(errno)") }
            size = 0
        }
    }

    public func sync() throws { try syncData(descriptor) }

    deinit { close(descriptor) }
}

/// The limit for durable appends into space allocated ahead:
/// `pwrite(2)` of `recordSize` bytes at the next offset of a file
/// preallocated to `capacity` bytes (`posix_fallocate` on Linux; zeros
/// written once on Apple), then `fdatasync` (`F_FULLFSYNC` on Apple). The
/// file's size never changes, so a sync has no size change to journal —
/// what SQLite's WAL gets when it is reused in place after a checkpoint.
/// Past `capacity` it starts again at offset 0 (still allocated).
public final class RawPreallocatedFile: @unchecked Sendable {
    public let path: String
    public let recordSize: Int
    private let descriptor: Int32
    private let capacity: Int
    private var buffer: [UInt8]
    private var offset = 0

    public init(path: String, recordSize: Int, capacity: Int = 64 << 20) throws {
        self.path = path
        self.recordSize = recordSize
        self.capacity = capacity
        descriptor = open(path, O_CREAT | O_RDWR | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw BenchError("open \(path): errno \(errno)") }
        buffer = [UInt8](repeating: 0x5A, count: recordSize)
        #if canImport(Darwin)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        for chunk in stride(from: 0, to: capacity, by: zeros.count) {
            let written = zeros.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(chunk)) }
            guard written == zeros.count else { throw BenchError("zero-fill: errno \(errno)") }
        }
        #else
        let status = posix_fallocate(descriptor, 0, off_t(capacity))
        guard status == 0 else { throw BenchError("posix_fallocate: error \(status)") }
        #endif
        // The allocation itself must be durable before the loop starts.
        guard fsync(descriptor) == 0 else { throw BenchError("fsync: errno \(errno)") }
    }

    /// Writes one record at the next offset and syncs it.
    public func append() throws {
        if offset + recordSize > capacity { offset = 0 }
        let written = buffer.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == buffer.count else { throw BenchError("pwrite: errno \(errno)") }
        offset += written
        try syncData(descriptor)
    }

    deinit { close(descriptor) }
}

/// What the seeds' SharedPreferences / MMKV outboxes do: the whole queue is
/// one JSON array, re-encoded and rewritten on every change (write a temp
/// file, `fsync` it, `rename` it over the old one). Fine for the 0–1 entries
/// an app usually has queued; linear in the queue's size per change.
public final class JSONFileOutbox: @unchecked Sendable {
    /// One entry, as the seeds' `OutboxRecord.toJson()` writes it.
    public struct Record: Codable, Sendable {
        public var id: String
        public var type: String
        public var endpoint: String
        public var method: String
        public var idempotency_key: String
        public var payload: String
        public var created_at: Double
        public var attempt_count: Int
        public var status: String
    }

    public let path: String
    private let temporary: String
    private var records: [Record] = []
    private var positions: [String: Int] = [:]
    private let encoder = JSONEncoder()

    public init(path: String) {
        self.path = path
        self.temporary = path + ".tmp"
    }

    public var count: Int { records.count }

    /// Adds a record and rewrites the file. Returns the record's id.
    @discardableResult
    public func enqueue(payload: String) throws -> String {
        let id = add(payload: payload)
        try persist()
        return id
    }

    /// Adds `count` records and rewrites the file once (to build a deep queue).
    public func preload(count: Int, payload: String) throws {
        for _ in 0..<count { add(payload: payload) }
        try persist()
    }

    /// Appends a pending record in memory, as the seeds' enqueue builds it. Returns its id.
    @discardableResult
    private func add(payload: String) -> String {
        let id = UUID().uuidString
        records.append(
            Record(
                id: id, type: "send_message", endpoint: "/conversations/c1/messages", method: "POST",
                idempotency_key: UUID().uuidString, payload: payload, created_at: Date().timeIntervalSince1970,
                attempt_count: 0, status: "pending"))
        positions[id] = records.count - 1
        return id
    }

    /// Removes a delivered record and rewrites the file.
    public func acknowledge(_ id: String) throws {
        guard let position = positions.removeValue(forKey: id) else { throw BenchError("no record \(id)") }
        records.remove(at: position)
        for index in position..<records.count { positions[records[index].id] = index }
        try persist()
    }

    /// Reads and decodes the file (what the app does at launch).
    public func load() throws -> Int {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        records = try JSONDecoder().decode([Record].self, from: data)
        positions = [:]
        for (index, record) in records.enumerated() { positions[record.id] = index }
        return data.count
    }

    private func persist() throws {
        let data = try encoder.encode(records)
        let descriptor = open(temporary, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw BenchError("open \(temporary): errno \(errno)") }
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == data.count else { throw BenchError("write: errno \(errno)") }
        #if canImport(Darwin)
        guard fcntl(descriptor, F_FULLFSYNC) == 0 else { throw BenchError("F_FULLFSYNC: errno \(errno)") }
        #else
        guard fsync(descriptor) == 0 else { throw BenchError("fsync: errno \(errno)") }
        #endif
        guard rename(temporary, path) == 0 else { throw BenchError("rename: errno \(errno)") }
    }
}
