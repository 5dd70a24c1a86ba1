import Foundation
import OutboxLog

/// How an element is stored: one value record in the elements' log, keyed
/// by an 8-byte big-endian counter, whose payload is the append time — 8
/// bytes, little-endian, signed milliseconds since 1970 — then the
/// element's bytes. The time is the queue's own (in the payload, not the
/// record's expiry, which the log's own retention would read as "expired").
package enum ElementRecord {
    package static let headerSize = 8

    /// The append time as stored, or `nil` for a date it cannot hold (not
    /// finite, or more than about 31,700 years from 1970).
    static func milliseconds(_ date: Date) -> Int64? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return nil }
        return Int64(milliseconds)
    }

    package static func header(_ milliseconds: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: milliseconds >> (8 * $0)) }
    }

    /// A record's payload read back: the append time and the element's
    /// bytes, or `nil` for a payload shorter than its header.
    package static func split(_ payload: [UInt8]) -> (milliseconds: Int64, bytes: ArraySlice<UInt8>)? {
        guard payload.count >= headerSize else { return nil }
        let milliseconds = payload[0..<headerSize].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return (milliseconds, payload[headerSize...])
    }

    /// The element an entry holds; `damaged` for one shorter than its header.
    static func decode(_ entry: LogEntry, in log: OutboxLog) throws(QueueError) -> QueueElement {
        guard let (milliseconds, bytes) = split(entry.value) else {
            throw QueueError(
                .damaged,
                "the element at position \(entry.sequence) in \(log.directory) is \(entry.value.count) bytes, "
                    + "shorter than its \(headerSize)-byte header")
        }
        return QueueElement(
            position: QueuePosition(rawValue: entry.sequence), bytes: Array(bytes),
            appendedAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
