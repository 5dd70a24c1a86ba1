import Foundation
import OutboxLog

/// Where an element is in its queue. Positions increase with every append
/// (not always by one), across restarts too. An element lost in a crash —
/// appended `buffered`, or not yet `durable` at a power loss — may see its
/// position given to a later element; the position of an element that
/// survived never is.
public struct QueuePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The sequence number of the element's record in the queue's log.
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: QueuePosition, rhs: QueuePosition) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }
}

/// One element, as a consumer reads it.
public struct QueueElement: Sendable, Hashable {
    public var position: QueuePosition
    public var bytes: [UInt8]
    /// When it was appended, by the queue's clock, to the millisecond
    /// (rounded down).
    public var appendedAt: Date

    public init(position: QueuePosition, bytes: [UInt8], appendedAt: Date) {
        self.position = position
        self.bytes = bytes
        self.appendedAt = appendedAt
    }
}
