/// What ``OutboxLog/removeExpired(now:)`` removed.
public struct RetentionReport: Sendable, Hashable, CustomStringConvertible {
    /// Segment files removed, oldest first.
    public var segmentsRemoved = 0
    /// Bytes of those files, headers included.
    public var bytesRemoved: Int64 = 0
    /// Keys whose live value was in them: gone from the log.
    public var keysRemoved = 0

    public init() {}

    public var description: String {
        segmentsRemoved == 0
            ? "nothing removed"
            : "removed \(segmentsRemoved) segment(s) of \(bytesRemoved) bytes and \(keysRemoved) key(s)"
    }
}
