import Foundation
import OutboxLog

extension DurableQueue {
    /// Removes, a whole segment of the elements' log at a time (no
    /// per-element deletes), the oldest elements every consumer has
    /// committed past, and then those the configuration's limits
    /// (``QueueRetention``) give up: older than its age or beyond its size,
    /// never past the commit of a consumer the limits wait for. The
    /// consumers' commits are synced first, so a power loss cannot take a
    /// consumer back before what was removed. With no consumer, only the
    /// limits remove anything (a consumer made later reads from the oldest
    /// element). The segment being appended to always stays.
    ///
    /// - Parameter now: The time the age limit counts back from: the
    ///   configuration's clock by default.
    /// - Returns: what was removed, which consumers missed elements, and
    ///   which held the limits back.
    /// - Throws: `damaged` if a consumer's committed position does not read
    ///   back (nothing is removed; ``removeConsumer(named:)`` repairs it);
    ///   `closed`; `log`.
    /// - Complexity: O(*c*) reads of the consumers' positions, then O(*r*)
    ///   in the elements removed (read once for their keys), plus one file
    ///   deletion per segment.
    @discardableResult
    public func trim(now: Date? = nil) async throws(QueueError) -> QueueTrimReport {
        do { try await offsets.log.sync() } catch { throw QueueError.from(error, "cannot sync the consumers' commits") }
        let commits = try await committedPositions()
        var report = QueueTrimReport()
        // Everyone is past these: nobody is overtaken.
        if let floor = commits.map(\.committed).min(), floor > 0 {
            report.add(try await removing { [elements] () throws(OutboxLogError) in try await elements.removeSegments(before: floor.saturatingSuccessor) })
        }
        guard retention.maximumAge != nil || retention.maximumBytes != nil else { return report }

        let holders = commits.filter { retention.waitsFor($0.key) }
        let floor = holders.map(\.committed.saturatingSuccessor).min() ?? .max
        // Where each consumer the limits pass would read next, to tell
        // whether what goes is something it had not read.
        var nextRead: [String: UInt64] = [:]
        for commit in commits where !retention.waitsFor(commit.key) {
            do { nextRead[commit.name] = try await elements.entries(after: commit.committed, limit: 1).first?.sequence } catch {
                throw QueueError.from(error, "cannot read consumer \(commit.name)'s next element")
            }
        }
        let cutoff = maximumAgeCutoff(now: now ?? clock())
        if let cutoff {
            report.add(try await removing { [elements] () throws(OutboxLogError) in try await elements.removeExpired(now: cutoff, below: floor) })
        }
        if let bytes = retention.maximumBytes {
            report.add(try await removing { [elements] () throws(OutboxLogError) in
                try await elements.removeOldestSegments(keepingAtMost: bytes, below: floor)
            })
        }
        if let below = report.removedBelow {
            report.overtaken = commits.compactMap { commit in
                guard let next = nextRead[commit.name], next < below.rawValue else { return nil }
                return QueueTrimReport.Overtaken(
                    consumer: commit.name, committed: commit.committed == 0 ? nil : QueuePosition(rawValue: commit.committed),
                    readsOnFrom: below)
            }
        }
        if floor != .max, stillOverLimits(cutoff: cutoff) {
            report.heldBackBy = holders.filter { $0.committed.saturatingSuccessor == floor }.map(\.name).sorted()
        }
        return report
    }

    /// Every consumer's committed position, by name.
    func committedPositions() async throws(QueueError) -> [(name: String, key: LogKey, committed: UInt64)] {
        var commits: [(name: String, key: LogKey, committed: UInt64)] = []
        for key in offsets.log.keys {
            guard let committed = try await offsets.committed(key) else { continue }
            commits.append((String(decoding: key.bytes, as: UTF8.self), key, committed))
        }
        return commits
    }

    private func removing(_ removal: () async throws(OutboxLogError) -> RetentionReport) async throws(QueueError) -> RetentionReport {
        do { return try await removal() } catch { throw QueueError.from(error, "cannot remove elements") }
    }

    /// The append time before which elements are older than the age limit.
    private func maximumAgeCutoff(now: Date) -> Date? {
        guard let age = retention.maximumAge else { return nil }
        let (seconds, attoseconds) = age.components
        return now.addingTimeInterval(-(Double(seconds) + Double(attoseconds) * 1e-18))
    }

    /// Whether the oldest segment (not the only one) is still past a limit.
    private func stillOverLimits(cutoff: Date?) -> Bool {
        let statistics = elements.statistics
        guard statistics.segments > 1 else { return false }
        if let bytes = retention.maximumBytes, statistics.totalBytes > bytes { return true }
        if let cutoff, let oldest = statistics.nextRemovalAt, oldest <= cutoff { return true }
        return false
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
