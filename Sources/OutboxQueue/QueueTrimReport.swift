import OutboxLog

/// What ``DurableQueue/trim(now:)`` removed, and who it left behind or was
/// held back by.
public struct QueueTrimReport: Sendable, Hashable, CustomStringConvertible {
    /// A consumer the limits do not wait for, which had not committed
    /// elements that were removed: it reads on from the oldest element kept.
    public struct Overtaken: Sendable, Hashable {
        public var consumer: String
        /// Its commit when the elements went: `nil` if it had committed none.
        public var committed: QueuePosition?
        /// Every element after ``committed`` and before this position is
        /// gone: the consumer reads on from here.
        public var readsOnFrom: QueuePosition

        public init(consumer: String, committed: QueuePosition?, readsOnFrom: QueuePosition) {
            self.consumer = consumer
            self.committed = committed
            self.readsOnFrom = readsOnFrom
        }
    }

    /// Segment files of the elements' log removed.
    public var segmentsRemoved = 0
    /// Bytes of those files, headers included.
    public var bytesRemoved: Int64 = 0
    /// Elements removed.
    public var elementsRemoved = 0
    /// Every element before this position is gone; `nil` when nothing was
    /// removed.
    public var removedBelow: QueuePosition?
    /// Consumers that missed elements they had not committed, by name.
    public var overtaken: [Overtaken] = []
    /// When the queue is still over a limit after the trim: the consumers
    /// the limits wait for whose commit keeps the oldest element, by name.
    public var heldBackBy: [String] = []

    public init() {}

    public var description: String {
        var parts = [
            segmentsRemoved == 0
                ? "nothing removed"
                : "removed \(elementsRemoved) element(s) in \(segmentsRemoved) segment(s) of \(bytesRemoved) bytes"
        ]
        for consumer in overtaken {
            parts.append("\(consumer.consumer) missed the elements after \(consumer.committed.map(\.description) ?? "its start") before \(consumer.readsOnFrom)")
        }
        if !heldBackBy.isEmpty { parts.append("over the limits, held back by \(heldBackBy.joined(separator: ", "))") }
        return parts.joined(separator: "; ")
    }

    mutating func add(_ report: RetentionReport) {
        segmentsRemoved += report.segmentsRemoved
        bytesRemoved += report.bytesRemoved
        elementsRemoved += report.keysRemoved
        if let below = report.removedBelow { removedBelow = max(removedBelow ?? QueuePosition(rawValue: below), QueuePosition(rawValue: below)) }
    }
}
