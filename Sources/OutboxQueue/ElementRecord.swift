import Foundation
import OutboxLog

/// How an element is stored: one value record in the elements' log, keyed
/// by an 8-byte big-endian counter, whose payload is the append time — 8
/// bytes, little-endian, signed milliseconds since 1970 — then the
/// element's bytes. The time is the queue's own (in the payload, not the
/// record's expiry, which the log's own retention would read as "expired").
enum ElementRecord {
    static let headerSize = 8

    /// The append time as stored, or `nil` for a date it cannot hold (not
    /// finite, or more than about 31,700 years from 1970).
    static func milliseconds(_ date: Date) -> Int64? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return nil }
        return Int64(milliseconds)
    }

    static func header(_ milliseconds: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: milliseconds >> (8 * $0)) }
    }

    /// The element an entry holds; `damaged` for one shorter than its header.
    static func decode(_ entry: LogEntry, in log: OutboxLog) throws(QueueError) -> QueueElement {
        guard entry.value.count >= headerSize else {
            throw QueueError(
                .damaged,
                "the element at position \(entry.sequence) in \(log.directory) is \(entry.value.count) bytes, "
                    + "shorter than its \(headerSize)-byte header")
        }
        let milliseconds = entry.value[0..<headerSize].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return QueueElement(
            position: QueuePosition(rawValue: entry.sequence), bytes: Array(entry.value[headerSize...]),
            appendedAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
