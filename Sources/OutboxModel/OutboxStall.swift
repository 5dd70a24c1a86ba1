import Foundation

/// A queue that holds unsent writes and has delivered none of them — nor
/// set any aside — for longer than the dispatcher's `stallThreshold`: what
/// `OutboxEvent.stalled(_:)` reports, once per stall.
public struct OutboxStall: Sendable, Hashable, CustomStringConvertible {
    /// The last time the queue moved (a write delivered, quarantined, left
    /// in conflict or discarded; the app retrying one), or the time its
    /// unsent writes began to wait.
    public var since: Date
    /// Writes not delivered nor set aside when the stall was noticed.
    public var unsent: Int
    /// Why the oldest of them waits: the cause to show or fix first.
    public var oldest: OutboxExplanation

    public init(since: Date, unsent: Int, oldest: OutboxExplanation) {
        self.since = since
        self.unsent = unsent
        self.oldest = oldest
    }

    public var description: String {
        "the outbox has not moved since \(since.formatted(.iso8601)) with \(unsent) unsent; the oldest, \(oldest.id): \(oldest)"
    }
}
