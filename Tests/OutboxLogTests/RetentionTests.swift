import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Records that expire, and retention: ``OutboxLog/removeExpired(now:)``
/// removes the oldest segments whose every value and annotation expired,
/// never one that holds a record without an expiry, never the active one,
/// and atomically across a crash.
@Suite("Retention")
struct RetentionTests {
    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

    /// Puts `count` keys `prefix-i` of 200 bytes (about 16 to a 4 KiB
    /// segment), expiring at `expiresAt`; returns them in order.
    @discardableResult
    static func fill(_ log: OutboxLog, _ prefix: String, count: Int, expiresAt: Date?) async throws -> [LogKey] {
        var keys: [LogKey] = []
        for index in 0..<count {
            let key = LogKey("\(prefix)-\(index)")
            try await log.put(key, .pattern(200, seed: index), expiresAt: expiresAt, durability: .written)
            keys.append(key)
        }
        return keys
    }

    @Test("an expiry comes back with its record, rounded up to the millisecond, after a reopen and after a compaction")
    func expiryRoundTrips() async throws {
        let directory = TemporaryDirectory()
        var log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        let written = Date(timeIntervalSince1970: 1_767_225_600.1234)
        // Rounded up to its millisecond: never removed before the time given.
        let expiry = Date(timeIntervalSince1970: 1_767_225_600.124)
        try await log.put("a", [1, 2, 3], expiresAt: written, durability: .durable)
        try await log.annotate("a", [9], expiresAt: Self.at(-5), durability: .durable)
        try await log.put("b", [4], durability: .durable)
        try await Self.fill(log, "filler", count: 40, expiresAt: nil)
        try await log.put("b", [5], durability: .durable)  // a dead record, so compaction rewrites "a"'s segment
        for stage in ["as written", "after a reopen", "after a compaction"] {
            let a = try #require(try await log.get("a"), "\(stage)")
            #expect(a.value == [1, 2, 3], "\(stage)")
            #expect(a.expiresAt.map { abs($0.timeIntervalSince(expiry)) < 1e-6 } == true, "\(stage): \(String(describing: a.expiresAt))")
            #expect(a.annotation?.payload == [9] && a.annotation?.expiresAt == Self.at(-5), "\(stage)")
            #expect(try await log.get("b")?.expiresAt == nil, "\(stage)")
            let paged = try await log.entries(after: 0, limit: 1).first
            #expect(paged?.key == "a" && paged?.expiresAt == a.expiresAt, "\(stage): entries(after:)")
            if stage == "as written" {
                try await log.close()
                log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
            } else if stage == "after a reopen" {
                let report = try await log.compact()
                #expect(report.recordsCopied > 0)
            }
        }
        try await log.close()
    }

    @Test(
        "an expiry the format cannot hold, or one on a tombstone, is refused and writes nothing",
        // Seconds, not dates: Foundation's `Date.description` traps on a
        // date that is not finite, and the test's name would print one.
        arguments: [Double.infinity, -.infinity, .nan, 1e16])
    func refusesUnstorableExpiry(seconds: Double) async throws {
        let date = Date(timeIntervalSince1970: seconds)
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await log.put("kept", [1], durability: .durable)
        let next = log.statistics.nextSequence
        await #expect(throws: OutboxLogError.self) { try await log.put("x", [1], expiresAt: date, durability: .durable) }
        await #expect(throws: OutboxLogError.self) {
            try await log.append([.value("y", [1]), LogWrite(kind: .tombstone, key: "kept", expiresAt: Self.at(1))], durability: .durable)
        }
        #expect(log.statistics.nextSequence == next, "nothing was written")
        try await log.put("after", [2], expiresAt: Self.at(1), durability: .durable)
        #expect(Set(log.keys) == ["kept", "after"])
        try await log.close()
    }

    @Test("retention removes the oldest segments whose records all expired, and stops at the first that has not")
    func removesOldestExpiredSegments() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        let early = try await Self.fill(log, "early", count: 40, expiresAt: Self.at(10))
        let later = try await Self.fill(log, "later", count: 40, expiresAt: Self.at(20))
        let forever = try await Self.fill(log, "forever", count: 3, expiresAt: nil)
        let soon = try await Self.fill(log, "soon", count: 40, expiresAt: Self.at(5))
        let segments = log.statistics.segments

        let none = try await log.removeExpired(now: Self.at(9.999))
        #expect(none == RetentionReport())

        let first = try await log.removeExpired(now: Self.at(15))
        #expect(first.segmentsRemoved >= 1 && first.keysRemoved >= 16, "\(first)")
        #expect(first.keysRemoved < early.count, "the segment shared with `later` stays: \(first)")
        #expect(log.statistics.segments == segments - first.segmentsRemoved)
        var remaining = Set(log.keys)
        #expect(remaining == Set(early.dropFirst(first.keysRemoved) + later + forever + soon))

        let second = try await log.removeExpired(now: Self.at(25))
        remaining = Set(log.keys)
        #expect(second.keysRemoved > 0)
        // Everything before the segment of the keys that never expire is
        // gone; that segment and every one after it stay, expired or not.
        #expect(remaining.isSuperset(of: forever + soon), "\(second)")
        #expect(remaining.isDisjoint(with: early), "\(second)")
        #expect(remaining.count == early.count + later.count + forever.count + soon.count - first.keysRemoved - second.keysRemoved)
        #expect(try await log.removeExpired(now: Self.at(1_000)) == RetentionReport(), "held back by `forever`")

        // A removed key reads as absent; a kept expired one reads with its expiry.
        #expect(try await log.get(early[0]) == nil)
        #expect(try await log.get(soon[0])?.expiresAt == Self.at(5))
        try await log.close()
    }

    @Test("an expired active segment is sealed and removed; the new empty one stays and carries the sequence floor")
    func activeSegmentSealed() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await Self.fill(log, "k", count: 5, expiresAt: Self.at(1))
        #expect(try await log.removeExpired(now: Self.at(0.5)) == RetentionReport(), "not expired yet: nothing sealed")
        #expect(log.statistics.segments == 1)
        let next = log.statistics.nextSequence
        let report = try await log.removeExpired(now: Self.at(100))
        #expect(report.segmentsRemoved == 1 && report.keysRemoved == 5, "\(report)")
        #expect(log.statistics.segments == 1 && log.keys.isEmpty)
        #expect(try await log.removeExpired(now: Self.at(100)) == RetentionReport(), "an empty active segment is not sealed again")
        try await log.close()
        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        #expect(reopened.statistics.nextSequence >= next)
        #expect(try await reopened.put("after", [1], durability: .durable) >= next)
        try await reopened.close()
    }

    @Test("a record goes only once its own time has passed, not at the millisecond it is rounded up to")
    func neverEarly() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await log.put("k", [1], expiresAt: Self.at(1.0005), durability: .durable)  // stored as 1,001 ms
        #expect(try await log.removeExpired(now: Self.at(1.0001)) == RetentionReport())
        #expect(try await log.removeExpired(now: Self.at(1.0009)) == RetentionReport())
        #expect(try await log.removeExpired(now: Self.at(1.001)).keysRemoved == 1)
        try await log.close()
    }

    @Test("while an older segment holds a record that never expires, retention does not roll the active segment")
    func noRollWhenBlocked() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await log.put("config", [1], durability: .durable)
        try await Self.fill(log, "k", count: 40, expiresAt: Self.at(1))
        let segments = log.statistics.segments
        #expect(segments > 1)
        for _ in 0..<5 { #expect(try await log.removeExpired(now: Self.at(100)) == RetentionReport()) }
        #expect(log.statistics.segments == segments)
        #expect(log.statistics.nextRemovalAt == nil, "the oldest segment never goes by time")
        try await log.close()
    }

    @Test("a superseded value without an expiry holds its segment back until compaction drops it")
    func unexpiringDeadRecordHoldsBack() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await log.put("plain", [1], durability: .written)
        try await log.put("plain", [2], expiresAt: Self.at(1), durability: .written)
        try await Self.fill(log, "k", count: 60, expiresAt: Self.at(1))
        #expect(try await log.removeExpired(now: Self.at(100)) == RetentionReport())
        _ = try await log.compact()
        let report = try await log.removeExpired(now: Self.at(100))
        #expect(report.segmentsRemoved >= 1, "\(report)")
        try await log.close()
    }

    @Test("retention works the same after a reopen that scanned the log and one that read the index checkpoint", arguments: [false, true])
    func afterReopen(checkpoints: Bool) async throws {
        let directory = TemporaryDirectory()
        var configuration = smallSegments()
        configuration.indexCheckpoints = checkpoints
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        let early = try await Self.fill(log, "early", count: 40, expiresAt: Self.at(10))
        let plain = try await Self.fill(log, "plain", count: 20, expiresAt: nil)
        try await log.close()
        let reopened = try await OutboxLog.open(at: directory.path, configuration: configuration)
        #expect((reopened.recoveryReport.indexCheckpoint != nil) == checkpoints, "\(reopened.recoveryReport)")
        let report = try await reopened.removeExpired(now: Self.at(11))
        #expect(report.segmentsRemoved >= 1 && report.keysRemoved >= 16, "\(report)")
        #expect(Set(reopened.keys) == Set(early.dropFirst(report.keysRemoved) + plain))
        try await reopened.close()
        let again = try await OutboxLog.open(at: directory.path, configuration: configuration)
        #expect(Set(again.keys) == Set(early.dropFirst(report.keysRemoved) + plain))
        try await again.close()
    }

    @Test("a read-only log refuses retention")
    func readOnlyRefuses() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await Self.fill(log, "k", count: 40, expiresAt: Self.at(1))
        try await log.close()
        var configuration = smallSegments()
        configuration.readOnly = true
        let reader = try await OutboxLog.open(at: directory.path, configuration: configuration)
        await #expect(throws: OutboxLogError.self) { try await reader.removeExpired(now: Self.at(100)) }
        try await reader.close()
    }
}
