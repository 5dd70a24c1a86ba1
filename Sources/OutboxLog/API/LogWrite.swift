import Foundation

/// One record of an append: a value, an annotation or a tombstone for a key.
///
/// Pass several to ``OutboxLog/append(_:durability:)`` to write them as one
/// atomic batch: after a crash, recovery finds all of them or none.
public struct LogWrite: Sendable, Hashable {
    public var kind: RecordKind
    public var key: LogKey
    /// The record's bytes: for a write made from ``value(_:parts:expiresAt:)``,
    /// its parts joined (a copy; ``payloadCount`` counts them without one).
    public var payload: [UInt8] {
        get {
            switch storage {
            case .whole(let bytes): return bytes
            case .parts(let parts): return Array(parts.joined())
            }
        }
        set { storage = .whole(newValue) }
    }
    /// When the record stops mattering, for retention: values and
    /// annotations only (an append refuses it on a tombstone), stored
    /// rounded up to the millisecond, so a record is never removed before
    /// this time. `nil`, the default, never expires.
    ///
    /// Expiry does not hide a record: ``OutboxLog/get(_:)->LogEntry?`` returns it with
    /// its ``LogEntry/expiresAt`` until ``OutboxLog/removeExpired(now:below:)``
    /// removes its segment, and deciding what an expired record means is the
    /// caller's. An append refuses a date it cannot store exactly (not
    /// finite, or more than about 31,700 years from 1970).
    public var expiresAt: Date?

    private var storage: Payload

    public init(kind: RecordKind, key: LogKey, payload: [UInt8] = [], expiresAt: Date? = nil) {
        self.kind = kind
        self.key = key
        self.storage = .whole(payload)
        self.expiresAt = expiresAt
    }

    /// Sets `key`'s value (and clears its annotation); with `expiresAt`,
    /// the value expires then (see ``expiresAt``).
    public static func value(_ key: LogKey, _ payload: [UInt8], expiresAt: Date? = nil) -> LogWrite {
        LogWrite(kind: .value, key: key, payload: payload, expiresAt: expiresAt)
    }

    /// Sets `key`'s value to `parts` joined, in order (a *gather* write, as
    /// RocksDB's `SliceParts`): the parts are copied once, into the log's
    /// buffer, as the record is encoded. For a payload made of pieces ready
    /// at different times — a header known only under your own lock, and a
    /// body encoded before you took it — that would otherwise be joined into
    /// a copy of their own first. On disk it is one value like any other.
    public static func value(_ key: LogKey, parts: [ArraySlice<UInt8>], expiresAt: Date? = nil) -> LogWrite {
        var write = LogWrite(kind: .value, key: key, expiresAt: expiresAt)
        write.storage = .parts(parts)
        return write
    }

    /// Replaces the annotation of `key`'s current value. The key must have a
    /// value (now, or earlier in the same batch).
    public static func annotation(_ key: LogKey, _ payload: [UInt8], expiresAt: Date? = nil) -> LogWrite {
        LogWrite(kind: .annotation, key: key, payload: payload, expiresAt: expiresAt)
    }

    /// Deletes `key`.
    public static func tombstone(_ key: LogKey) -> LogWrite {
        LogWrite(kind: .tombstone, key: key)
    }

    /// The payload's size in bytes, without joining its parts.
    public var payloadCount: Int {
        switch storage {
        case .whole(let bytes): return bytes.count
        case .parts(let parts): return parts.reduce(0) { $0 + $1.count }
        }
    }

    /// The bytes this record takes in a segment.
    public var frameSize: Int {
        RecordFrame.size(keyCount: key.count, payloadCount: payloadCount, expires: expiresAt != nil)
    }

    /// The expiry as stored; `nil` also for a date the format cannot hold,
    /// which the append's validation refuses first.
    var expiryMilliseconds: Int64? { expiresAt.flatMap(RecordExpiry.milliseconds) }

    /// Appends the payload's bytes, part by part, to `buffer`.
    func appendPayload(to buffer: inout [UInt8]) {
        switch storage {
        case .whole(let bytes): buffer.append(contentsOf: bytes)
        case .parts(let parts): for part in parts { buffer.append(contentsOf: part) }
        }
    }

    /// Equal writes write the same bytes, however their payloads are split.
    public static func == (lhs: LogWrite, rhs: LogWrite) -> Bool {
        guard lhs.kind == rhs.kind, lhs.key == rhs.key, lhs.expiresAt == rhs.expiresAt,
            lhs.payloadCount == rhs.payloadCount
        else { return false }
        switch (lhs.storage, rhs.storage) {
        case (.whole(let left), .whole(let right)): return left == right
        default: return lhs.payload == rhs.payload
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(key)
        hasher.combine(expiresAt)
        hasher.combine(payloadCount)
        switch storage {
        case .whole(let bytes): bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        case .parts(let parts): for part in parts { part.withUnsafeBytes { hasher.combine(bytes: $0) } }
        }
    }

    /// One array (the common case, with nothing more to allocate), or the
    /// parts of a gather write.
    private enum Payload: Sendable {
        case whole([UInt8])
        case parts([ArraySlice<UInt8>])
    }
}

/// A live key read back from the log: its value and, if it has one, its
/// current annotation. Every byte was verified against its CRC.
public struct LogEntry: Sendable, Hashable {
    public var key: LogKey
    /// The sequence number of the value's record.
    public var sequence: UInt64
    public var value: [UInt8]
    /// The value's expiry as stored, in milliseconds since 1970.
    package var expiry: Int64?
    /// The current annotation, if any.
    public var annotation: Annotation?

    /// When the value expires (``LogWrite/expiresAt``, rounded up to its
    /// millisecond); `nil` if it never does.
    public var expiresAt: Date? { expiry.map(RecordExpiry.date) }

    public struct Annotation: Sendable, Hashable {
        /// The sequence number of the annotation's record.
        public var sequence: UInt64
        public var payload: [UInt8]
        /// The annotation's expiry as stored, in milliseconds since 1970.
        package var expiry: Int64?

        /// When the annotation expires, rounded up to its millisecond;
        /// `nil` if it never does.
        public var expiresAt: Date? { expiry.map(RecordExpiry.date) }
    }
}

/// A point-in-time view of a log's size and progress.
public struct LogStatistics: Sendable, Hashable {
    /// Segment files, the active one included.
    public var segments: Int
    /// Bytes in all segment files, headers included.
    public var totalBytes: Int64
    /// Bytes of records the index points at.
    public var liveBytes: Int64
    /// Bytes of superseded records and tombstones: what compaction reclaims.
    public var deadBytes: Int64
    /// Keys with a live value.
    public var liveKeys: Int
    /// The sequence number the next append receives.
    public var nextSequence: UInt64
    /// Every record up to this sequence number has been written to the OS.
    public var writtenSequence: UInt64
    /// Every record up to this sequence number is on stable storage.
    public var durableSequence: UInt64
    /// Bytes appended but not yet written.
    public var pendingBytes: Int
    /// Room reserved for batches not committed yet
    /// (``OutboxLog/reserve(bytes:)``, ``LogReservation``; ``OutboxLog/waitForRoom(bytes:)``
    /// reserves none): it counts against
    /// ``OutboxLog/Configuration/maximumPendingBytes`` like pending bytes.
    public var reservedBytes: Int = 0
    /// Group commits (syncs) performed since open.
    public var syncs: Int
    /// Compactions finished since open.
    public var compactions: Int
    /// The earliest time at which ``OutboxLog/removeExpired(now:below:)`` can
    /// remove the oldest segment (its latest expiry); `nil` if it never can
    /// by time alone, because that segment holds a value or annotation
    /// without an expiry (or the log holds nothing that expires).
    public var nextRemovalAt: Date? = nil
}
