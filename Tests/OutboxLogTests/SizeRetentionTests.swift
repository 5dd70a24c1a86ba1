import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Retention by size, and floors: ``OutboxLog/removeOldestSegments(keepingAtMost:below:)``
/// removes the oldest segments until the files fit a size, and both it and
/// ``OutboxLog/removeExpired(now:below:)`` stop at the first segment holding
/// a record at or past a floor.
@Suite("Retention by size, and retention floors")
struct SizeRetentionTests {
    /// 80 keys of 200 bytes in 4 KiB segments (about 16 to a segment); their sequence numbers.
    static func filled(_ log: OutboxLog, expiresAt: Date? = nil) async throws -> [UInt64] {
        var sequences: [UInt64] = []
        for index in 0..<80 {
            sequences.append(
                try await log.append([.value(LogKey("k-\(index)"), .pattern(200, seed: index), expiresAt: expiresAt)], durability: .written))
        }
        return sequences
    }

    /// The indexes of the keys still present: must be a suffix.
    static func present(_ log: OutboxLog) async throws -> [Int] {
        var present: [Int] = []
        for index in 0..<80 where try await log.get(LogKey("k-\(index)")) != nil { present.append(index) }
        #expect(present.isEmpty || present == Array(present.first!...79), "what is left is a suffix: \(present)")
        return present
    }

    @Test("the oldest segments go until the files fit, and no more; a reopen agrees")
    func removesDownToTheLimit() async throws {
        let directory = TemporaryDirectory()
        var log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        let sequences = try await Self.filled(log)
        // No more than needed: one byte over the limit costs one segment.
        let one = try await log.removeOldestSegments(keepingAtMost: log.statistics.totalBytes - 1)
        #expect(one.segmentsRemoved == 1)
        let before = log.statistics
        let limit = before.totalBytes / 2
        let report = try await log.removeOldestSegments(keepingAtMost: limit)
        let after = log.statistics
        #expect(after.totalBytes <= limit)
        #expect(after.totalBytes == before.totalBytes - report.bytesRemoved)
        #expect(report.segmentsRemoved > 0 && after.segments == before.segments - report.segmentsRemoved)
        let present = try await Self.present(log)
        #expect(80 - present.count == one.keysRemoved + report.keysRemoved)
        // removedBelow is exact: the first key kept is the first at or past it.
        let below = try #require(report.removedBelow)
        #expect(sequences[present.first!] >= below && (present.first! == 0 || sequences[present.first! - 1] < below))
        try await log.close()
        log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        #expect(try await Self.present(log) == present, "after a reopen")
        try await log.close()
    }

    @Test("a floor stops size retention; a limit of 0 leaves the newest segment; a log that fits loses nothing")
    func floorAndNewestStay() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        let sequences = try await Self.filled(log)
        #expect(try await log.removeOldestSegments(keepingAtMost: log.statistics.totalBytes) == RetentionReport())
        let floored = try await log.removeOldestSegments(keepingAtMost: 0, below: sequences[40])
        #expect(floored.segmentsRemoved > 0)
        let present = try await Self.present(log)
        #expect(present.first! <= 40, "a record at or past the floor was removed: \(present.first!)")
        let report = try await log.removeOldestSegments(keepingAtMost: 0)
        #expect(report.segmentsRemoved > 0)
        #expect(log.statistics.segments == 1, "the newest segment must stay")
        #expect(try await log.get("k-79") != nil)
        try await log.put("after", [1], durability: .durable)
        #expect(try await log.get("after")?.value == [1])
        try await log.close()
    }

    @Test("a floor stops time retention, and the active segment is not sealed under it")
    func floorStopsExpiry() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        let sequences = try await Self.filled(log, expiresAt: Date(timeIntervalSince1970: 10))
        let later = Date(timeIntervalSince1970: 100)
        let floored = try await log.removeExpired(now: later, below: sequences[40])
        #expect(floored.segmentsRemoved > 0)
        #expect(try await Self.present(log).first! <= 40)
        // Everything has expired, but the floor is below the newest record:
        // the active segment is neither sealed nor removed.
        let segments = log.statistics.segments
        let under = try await log.removeExpired(now: later, below: sequences[79])
        #expect(try await log.get("k-79") != nil)
        #expect(log.statistics.segments == segments - under.segmentsRemoved)
        // Without a floor the quiet active segment is sealed and goes too.
        let all = try await log.removeExpired(now: later)
        #expect(all.segmentsRemoved > 0)
        #expect(try await Self.present(log).isEmpty)
        try await log.close()
    }

    @Test("a negative limit and a read-only log are refused, changing nothing")
    func refusals() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        _ = try await Self.filled(log)
        let error = await #expect(throws: OutboxLogError.self) { try await log.removeOldestSegments(keepingAtMost: -1) }
        #expect(error?.code == .invalidArgument)
        #expect(try await Self.present(log).count == 80)
        try await log.close()
        var configuration = smallSegments()
        configuration.readOnly = true
        let reader = try await OutboxLog.open(at: directory.path, configuration: configuration)
        let refused = await #expect(throws: OutboxLogError.self) { try await reader.removeOldestSegments(keepingAtMost: 0) }
        #expect(refused?.code == .invalidArgument)
        #expect(try await Self.present(reader).count == 80)
        try await reader.close()
    }
}
