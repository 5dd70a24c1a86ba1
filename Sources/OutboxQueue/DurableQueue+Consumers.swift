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
            let maintenance = self.maintenance
            let made = Task {
                try await maintenance.run { () throws(QueueError) -> QueueConsumer in
                    try await Self.makeConsumer(named: name, startingAt: start, logs)
                }
            }
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
            // A removal was under way: the name is free now.
            if error is RemovalOutcome { return try await consumer(named: name, startingAt: start) }
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

    /// Removes the consumer named `name`: its committed position is
    /// deleted (durably, before this returns), so it no longer holds back
    /// ``trim(now:)``, and the ``QueueConsumer`` this queue handed out for it
    /// throws `removed` from then on. A later ``consumer(named:startingAt:)``
    /// creates it anew at its start. Returns whether it existed.
    ///
    /// - Throws: `invalidArgument` for a name that is not one; `closed`; `log`.
    @discardableResult
    public func removeConsumer(named name: String) async throws(QueueError) -> Bool {
        let key = Self.storedKey(named: name, exact: try ConsumerOffsets.key(name), in: offsets.log)
        // The removal takes the name's place among the creations: a
        // `consumer(named:)` meanwhile waits for it, then creates anew.
        let removal = try consumers.withLock { consumers throws(QueueError) -> Task<QueueConsumer, any Error> in
            guard !closed.withLock({ $0 }) else { throw QueueError(.closed, "the queue is closed") }
            let previous = consumers[key]
            let logs = self.logs
            let maintenance = self.maintenance
            let made = Task<QueueConsumer, any Error> {
                let handedOut = try? await previous?.value
                throw try await maintenance.run { () throws(QueueError) -> RemovalOutcome in
                    try await Self.remove(key, named: name, handedOut: handedOut, logs)
                }
            }
            consumers[key] = made
            return made
        }
        defer { consumers.withLock { if $0[key] == removal { $0[key] = nil } } }
        do {
            _ = try await removal.value
            return false
        } catch let outcome as RemovalOutcome {
            return outcome.existed
        } catch {
            throw error as? QueueError ?? QueueError(.log, "cannot remove consumer \(name): \(error)")
        }
    }

    /// The key the consumer `name` is stored under: its UTF-8 bytes, or —
    /// when nothing is stored under them — a stored key that is not UTF-8
    /// and reads back as `name`. A damaged or crafted consumers' log can
    /// hold such a key; it is listed with U+FFFD in place of its bad bytes,
    /// which no `String` encodes back to, and must still be removable (it
    /// holds back retention). Two such keys that read back alike are
    /// removed one call at a time.
    static func storedKey(named name: String, exact: LogKey, in log: OutboxLog) -> LogKey {
        guard name.contains("\u{FFFD}"), !log.contains(exact) else { return exact }
        return log.keys.first { key in
            String(validating: key.bytes, as: UTF8.self) == nil && String(decoding: key.bytes, as: UTF8.self) == name
        } ?? exact
    }

    /// How a removal ended: thrown, so that a creation waiting on the
    /// removal's task tries again.
    struct RemovalOutcome: Error {
        let existed: Bool
    }

    private static func remove(_ key: LogKey, named name: String, handedOut: QueueConsumer?, _ logs: QueueLogs) async throws(QueueError)
        -> RemovalOutcome
    {
        // A damaged position is removed like any other: that is how it is repaired.
        let existed: Bool
        do { existed = try await logs.offsets.log.get(key) != nil } catch { throw QueueError.from(error, "cannot read consumer \(name)") }
        guard existed || handedOut != nil else { return RemovalOutcome(existed: false) }
        let room = try await logs.offsets.room()
        let ticket: LogTicket
        if let handedOut {
            ticket = try handedOut.markRemoved(in: room)
        } else {
            ticket = try ConsumerOffsets.commit(.tombstone(key), in: room, consumer: key)
        }
        do { try await ticket.wait(for: .durable) } catch { throw QueueError.from(error, "cannot remove consumer \(name)") }
        return RemovalOutcome(existed: true)
    }

    /// A commit is made at least as durable as its elements, but a commit
    /// left `buffered` can still reach the disk with a later sync of the
    /// consumers' log while its elements did not: after a power loss it
    /// would point past the elements' end, and the next appends — at
    /// positions below it — would be skipped. Such commits are brought back
    /// to the end, durably, before anything is appended.
    /// One sync covers them all: the log syncs in order, so the last
    /// record's durability is every earlier one's.
    func clampCommitsToElements() async throws(QueueError) {
        let end = logs.newest
        var last: (key: LogKey, ticket: LogTicket)?
        for key in offsets.log.keys {
            // A damaged position is reported to whoever asks for that consumer.
            guard let committed = try? await offsets.committed(key), committed > end else { continue }
            last = (key, try await offsets.record(key, end))
        }
        guard let last else { return }
        do { try await last.ticket.wait(for: .durable) } catch {
            throw QueueError.from(error, "cannot bring consumer \(last.key) back to the end")
        }
    }

    /// The position of the newest element appended, or a later one; `nil`
    /// before the first.
    public var newestPosition: QueuePosition? {
        let newest = logs.newest
        return newest > 0 ? QueuePosition(rawValue: newest) : nil
    }
}
