/// What a retention call (``OutboxLog/removeExpired(now:below:)``,
/// ``OutboxLog/removeSegments(before:)``,
/// ``OutboxLog/removeOldestSegments(keepingAtMost:below:)``) removed.
public struct RetentionReport: Sendable, Hashable, CustomStringConvertible {
    /// Segment files removed, oldest first.
    public var segmentsRemoved = 0
    /// Bytes of those files, headers included.
    public var bytesRemoved: Int64 = 0
    /// Keys whose live value was in them: gone from the log.
    public var keysRemoved = 0
    /// Every record with a sequence number below this one is gone: the
    /// first sequence number of the oldest segment kept. `nil` when nothing
    /// was removed.
    public var removedBelow: UInt64?

    public init() {}

    public var description: String {
        segmentsRemoved == 0
            ? "nothing removed"
            : "removed \(segmentsRemoved) segment(s) of \(bytesRemoved) bytes and \(keysRemoved) key(s)"
    }
}
