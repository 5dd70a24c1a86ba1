import OutboxLog

/// What the queue and its consumers share: the two logs and the signal.
/// Consumers hold this, not the queue, so a queue dropped without
/// ``DurableQueue/close()`` is released (and its logs closed in the
/// background) even while consumers are cached in it.
struct QueueLogs: Sendable {
    let elements: OutboxLog
    let offsets: ConsumerOffsets
    let signal: AppendSignal

    /// The position of the newest element appended, or a later one; 0
    /// before the first.
    var newest: UInt64 { max(elements.statistics.nextSequence, 1) - 1 }

    /// Makes the elements through `position` reach `durability` before a
    /// commit covering them does: a commit that outlived its elements (a
    /// power loss keeping the consumers' sync and not the elements') would
    /// point past the recovered end, and the elements appended next — at
    /// positions below it — would be skipped.
    func elementsReach(_ position: UInt64, _ durability: Durability) async throws(QueueError) {
        let statistics = elements.statistics
        do {
            switch durability {
            case .durable where statistics.durableSequence < position: try await elements.sync()
            case .written where statistics.writtenSequence < position: try await elements.flush()
            default: break
            }
        } catch {
            throw QueueError.from(error, "cannot make the elements through \(position) \(durability)")
        }
    }
}
