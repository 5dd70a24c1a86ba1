import OutboxLog

extension DurableQueue {
    /// What the queue holds and where each consumer is.
    ///
    /// - Throws: `damaged` if a consumer's committed position does not read
    ///   back; `closed`; `log`.
    /// - Complexity: O(*c*) reads for *c* consumers, and one read of the
    ///   oldest element (verifying the oldest segment up to it).
    public func statistics() async throws(QueueError) -> QueueStatistics {
        let log = elements.statistics
        let oldest: UInt64?
        do { oldest = try await elements.entries(after: 0, limit: 1).first?.sequence } catch {
            throw QueueError.from(error, "cannot read the oldest element")
        }
        var consumers: [QueueStatistics.Consumer] = []
        for commit in try await committedPositions().sorted(by: { $0.name < $1.name }) {
            consumers.append(.init(name: commit.name, committed: commit.committed == 0 ? nil : QueuePosition(rawValue: commit.committed)))
        }
        return QueueStatistics(
            elements: log.liveKeys, oldest: oldest.map(QueuePosition.init(rawValue:)), newest: newestPosition,
            bytes: log.totalBytes, segments: log.segments, consumers: consumers)
    }
}
