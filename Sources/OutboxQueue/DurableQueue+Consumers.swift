import OutboxLog

extension DurableQueue {
    /// The consumer named `name`, created at `start` if it never was (its
    /// start is committed durably before this returns, so it survives a
    /// restart). One object per name: a second call returns the same one.
    /// Names are compared by their UTF-8 bytes, as they are stored.
    ///
    /// - Throws: `invalidArgument` for a name that is empty or longer than
    ///   255 UTF-8 bytes; `damaged` if its committed position does not read
    ///   back (other consumers are unaffected); `closed`; `log`.
    public func consumer(named name: String, startingAt start: Start = .oldest) async throws(QueueError) -> QueueConsumer {
        let key = try ConsumerOffsets.key(name)
        // One creation per name: a second caller awaits the first's, so two
        // first-time calls cannot each record a start.
        let creation = try consumers.withLock { consumers throws(QueueError) -> Task<QueueConsumer, any Error> in
            guard !closed.withLock({ $0 }) else { throw QueueError(.closed, "the queue is closed") }
            if let existing = consumers[key] { return existing }
            let logs = self.logs
            let made = Task { try await Self.makeConsumer(named: name, startingAt: start, logs) }
            consumers[key] = made
            return made
        }
        do {
            return try await creation.value
        } catch {
            // A failed creation (damage, a closed queue) is tried again by the next call.
            consumers.withLock { consumers in
                if consumers[key] == creation { consumers[key] = nil }
            }
            throw error as? QueueError ?? QueueError(.log, "cannot create consumer \(name): \(error)")
        }
    }

    private static func makeConsumer(named name: String, startingAt start: Start, _ logs: QueueLogs) async throws(QueueError)
        -> QueueConsumer
    {
        let key = try ConsumerOffsets.key(name)
        if let stored = try await logs.offsets.committed(key) {
            return QueueConsumer(name: name, logs: logs, committed: stored)
        }
        let position = start == .oldest ? 0 : logs.newest
        try await logs.elementsReach(position, .durable)
        let ticket = try await logs.offsets.record(key, position)
        do { try await ticket.wait(for: .durable) } catch { throw QueueError.from(error, "cannot create consumer \(name)") }
        return QueueConsumer(name: name, logs: logs, committed: position)
    }

    /// Removes the elements every consumer has committed past, a whole
    /// segment of the elements' log at a time (no per-element deletes):
    /// the oldest segments whose every element is at or before the lowest
    /// committed position. The consumers' commits are synced first, so a
    /// power loss cannot take a consumer back before what was removed. With
    /// no consumer, nothing is removed (a consumer made later reads from the
    /// oldest element). The segment being appended to always stays.
    ///
    /// - Returns: what was removed (`keysRemoved`: elements).
    /// - Throws: `damaged` if a consumer's committed position does not
    ///   read back (nothing is removed); `closed`; `log`.
    @discardableResult
    public func removeConsumed() async throws(QueueError) -> RetentionReport {
        do { try await offsets.log.sync() } catch { throw QueueError.from(error, "cannot sync the consumers' commits") }
        var floor: UInt64?
        for key in offsets.log.keys {
            guard let committed = try await offsets.committed(key) else { continue }
            floor = min(floor ?? committed, committed)
        }
        guard let floor, floor > 0 else { return RetentionReport() }
        do { return try await elements.removeSegments(before: floor < .max ? floor + 1 : floor) } catch {
            throw QueueError.from(error, "cannot remove consumed elements")
        }
    }

    /// A commit is made at least as durable as its elements, but a commit
    /// left `buffered` can still reach the disk with a later sync of the
    /// consumers' log while its elements did not: after a power loss it
    /// would point past the elements' end, and the next appends — at
    /// positions below it — would be skipped. Such commits are brought back
    /// to the end, durably, before anything is appended.
    func clampCommitsToElements() async throws(QueueError) {
        let end = logs.newest
        for key in offsets.log.keys {
            // A damaged position is reported to whoever asks for that consumer.
            guard let committed = try? await offsets.committed(key), committed > end else { continue }
            let ticket = try await offsets.record(key, end)
            do { try await ticket.wait(for: .durable) } catch { throw QueueError.from(error, "cannot bring consumer \(key) back to the end") }
        }
    }

    /// The position of the newest element appended, or a later one; `nil`
    /// before the first.
    public var newestPosition: QueuePosition? {
        let newest = logs.newest
        return newest > 0 ? QueuePosition(rawValue: newest) : nil
    }
}
