import Foundation
import OutboxLog

extension DurableQueue {
    /// Removes, a whole segment of the elements' log at a time (no
    /// per-element deletes), the oldest elements every consumer has
    /// committed past, and then those the configuration's limits
    /// (``QueueRetention``) give up: older than its age or beyond its size,
    /// never past the commit of a consumer the limits wait for. The commits
    /// it goes by are synced first, so a power loss cannot take a consumer
    /// back before what was removed. With no consumer, only the limits
    /// remove anything (a consumer made later reads from the oldest
    /// element). The segment being appended to always stays. Trims, and
    /// the creation and removal of consumers, take turns.
    ///
    /// - Parameter now: The time the age limit counts back from: the
    ///   configuration's clock by default.
    /// - Returns: what was removed, which consumers missed elements (as of
    ///   their commits when the trim began), and which held the limits back.
    /// - Throws: `damaged` if a consumer's committed position, or an element
    ///   the age limit reads, does not read back (nothing more is removed;
    ///   ``removeConsumer(named:)`` repairs a consumer); `closed`; `log`.
    /// - Complexity: O(*c*) reads of the consumers' positions; with an age
    ///   limit, O(*r*) to read the elements it removes and the first it
    ///   keeps; then O(*r*) in the elements removed (read once for their
    ///   keys), plus one file deletion per segment.
    @discardableResult
    public func trim(now: Date? = nil) async throws(QueueError) -> QueueTrimReport {
        try await maintenance.run { () throws(QueueError) -> QueueTrimReport in try await trimInTurn(now: now ?? clock()) }
    }

    private func trimInTurn(now: Date) async throws(QueueError) -> QueueTrimReport {
        let commits = try await committedPositions()
        // What is read is made durable before anything is removed by it.
        do { try await offsets.log.sync() } catch { throw QueueError.from(error, "cannot sync the consumers' commits") }
        var report = QueueTrimReport()
        // Everyone is past these: nobody is overtaken.
        if let floor = commits.map(\.committed).min(), floor > 0 {
            report.add(try await removeSegments(before: floor.saturatingSuccessor))
        }
        guard retention.maximumAge != nil || retention.maximumBytes != nil else { return report }

        let holders = commits.filter { retention.waitsFor($0.key) }
        let floor = holders.map(\.committed.saturatingSuccessor).min() ?? .max
        // Where each consumer the limits pass would read next, to tell
        // whether what goes is something it had not read.
        var nextRead: [LogKey: UInt64] = [:]
        for commit in commits where !retention.waitsFor(commit.key) {
            nextRead[commit.key] = try await firstPosition(after: commit.committed)
        }
        var held = false
        if let age = retention.maximumAge {
            let cut = try await ageCut(olderThan: now.addingTimeInterval(-age.seconds), below: floor)
            held = cut.held
            report.add(try await removeSegments(before: cut.position))
        }
        if let bytes = retention.maximumBytes {
            do { report.add(try await elements.removeOldestSegments(keepingAtMost: bytes, below: floor)) } catch {
                throw QueueError.from(error, "cannot remove elements")
            }
            let statistics = elements.statistics
            held = held || (floor != .max && statistics.totalBytes > bytes && statistics.segments > 1)
        }
        if let below = report.removedBelow {
            report.overtaken = commits.compactMap { commit in
                guard let next = nextRead[commit.key], next < below.rawValue else { return nil }
                return QueueTrimReport.Overtaken(
                    consumer: commit.name, committed: commit.committed == 0 ? nil : QueuePosition(rawValue: commit.committed),
                    readsOnFrom: below)
            }
        }
        if held { report.heldBackBy = holders.filter { $0.committed.saturatingSuccessor == floor }.map(\.name).sorted() }
        return report
    }

    /// Every consumer's committed position, with its name and key.
    func committedPositions() async throws(QueueError) -> [(name: String, key: LogKey, committed: UInt64)] {
        var commits: [(name: String, key: LogKey, committed: UInt64)] = []
        for key in offsets.log.keys {
            guard let committed = try await offsets.committed(key) else { continue }
            commits.append((String(decoding: key.bytes, as: UTF8.self), key, committed))
        }
        return commits
    }

    /// Where the age limit cuts: the first element, from the oldest, that
    /// is younger than `cutoff` or at `floor` (then `held`), or the end.
    private func ageCut(olderThan cutoff: Date, below floor: UInt64) async throws(QueueError) -> (position: UInt64, held: Bool) {
        var after: UInt64 = 0
        while true {
            let entries: [LogEntry]
            do { entries = try await elements.entries(after: after, limit: 1024) } catch {
                throw QueueError.from(error, "cannot read elements for the age limit")
            }
            guard let last = entries.last else { return (min(floor, logs.newest.saturatingSuccessor), false) }
            for entry in entries {
                let element = try ElementRecord.decode(entry, in: elements)
                if element.appendedAt > cutoff { return (entry.sequence, false) }
                if entry.sequence >= floor { return (floor, true) }
            }
            after = last.sequence
        }
    }

    /// The position of the first element after `position`, if any.
    private func firstPosition(after position: UInt64) async throws(QueueError) -> UInt64? {
        do { return try await elements.entries(after: position, limit: 1).first?.sequence } catch {
            throw QueueError.from(error, "cannot read the elements after \(position)")
        }
    }

    private func removeSegments(before position: UInt64) async throws(QueueError) -> RetentionReport {
        do { return try await elements.removeSegments(before: position) } catch { throw QueueError.from(error, "cannot remove elements") }
    }
}

extension QueueRetention {
    /// Whether the limits wait for the consumer stored under `key` (names
    /// compared by their UTF-8 bytes, as they are stored).
    func waitsFor(_ key: LogKey) -> Bool {
        switch heldBy {
        case .everyConsumer: true
        case .consumers(let names): names.contains { LogKey(Array($0.utf8)) == key }
        case .noConsumer: false
        }
    }
}

extension UInt64 {
    /// One more, or `.max` at `.max`: the position after a commit.
    var saturatingSuccessor: UInt64 { self == .max ? .max : self + 1 }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
