/// How long a queue keeps elements beyond what its consumers need: limits
/// by age and by size, and which consumers those limits wait for.
///
/// ``DurableQueue/trim(now:)`` removes whole segments of the elements' log,
/// oldest first: every element every consumer has committed past, and then
/// those older than ``maximumAge`` or beyond ``maximumBytes`` — but never an
/// element that a consumer the limits wait for (``heldBy``) has not
/// committed. A consumer the limits do not wait for can fall behind them; it
/// then reads on from the oldest element kept, and the trim's report names
/// it with what it missed (``QueueTrimReport/overtaken``).
public struct QueueRetention: Sendable, Hashable {
    /// Which consumers the age and size limits wait for.
    public enum Holders: Sendable, Hashable {
        /// Every consumer: the limits only remove what every consumer has
        /// committed, so nothing is ever lost (the queue can grow past them
        /// while a consumer lags; the report names it, ``QueueTrimReport/heldBackBy``).
        case everyConsumer
        /// Only these consumers, by name (compared by their UTF-8 bytes, as
        /// they are stored: two spellings Swift calls equal are two names):
        /// the others may miss elements. A name no consumer has yet is
        /// waited for once one is created under it.
        case consumers([String])
        /// None: the limits apply whatever the consumers have read, as a
        /// buffer of the recent past (Kafka's time and size retention).
        case noConsumer
    }

    /// Elements appended longer ago than this go, by the time the queue
    /// stamped them with (``QueueElement/appendedAt``), oldest first: the
    /// first younger element stops the limit (a clock that went back can
    /// keep older ones behind it). `nil`: no limit.
    public var maximumAge: Duration?
    /// The elements' log is trimmed, oldest segments first, until its files
    /// hold at most this many bytes; the segment being appended to always
    /// stays, so one segment's worth is the least it keeps. `nil`: no limit.
    public var maximumBytes: Int64?
    /// Which consumers the limits wait for: ``Holders/everyConsumer`` by
    /// default.
    public var heldBy: Holders

    public init(maximumAge: Duration? = nil, maximumBytes: Int64? = nil, heldBy: Holders = .everyConsumer) {
        self.maximumAge = maximumAge
        self.maximumBytes = maximumBytes
        self.heldBy = heldBy
    }

    func validate() throws(QueueError) {
        if let age = maximumAge, age < .zero { throw QueueError(.invalidArgument, "a maximum age is not negative, not \(age)") }
        if let bytes = maximumBytes, bytes < 0 { throw QueueError(.invalidArgument, "a maximum size is at least 0 bytes, not \(bytes)") }
    }
}
