/// What a queue holds and where its consumers are
/// (``DurableQueue/statistics()``).
public struct QueueStatistics: Sendable, Hashable {
    /// One consumer and its commit.
    public struct Consumer: Sendable, Hashable {
        public var name: String
        /// Its committed position: `nil` if it started at the oldest and
        /// committed nothing.
        public var committed: QueuePosition?
    }

    /// Elements the queue holds.
    public var elements: Int
    /// The oldest element's position; `nil` when the queue is empty.
    public var oldest: QueuePosition?
    /// The newest element's position, or a later one; `nil` before the first append.
    public var newest: QueuePosition?
    /// Bytes of the elements' log files, headers included.
    public var bytes: Int64
    /// Segment files of the elements' log.
    public var segments: Int
    /// Every consumer, by name.
    public var consumers: [Consumer]
}
