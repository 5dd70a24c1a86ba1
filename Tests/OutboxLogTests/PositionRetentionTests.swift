import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Retention by position: ``OutboxLog/removeSegments(before:)`` removes the
/// oldest sealed segments whose every record is below a sequence number,
/// whatever their expiry, and never the newest segment.
@Suite("Retention by position")
struct PositionRetentionTests {
    @Test("only segments wholly below the position go; their keys are gone, the rest read as before, also after a reopen")
    func removesWholeSegmentsBelow() async throws {
        let directory = TemporaryDirectory()
        var log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var sequences: [UInt64] = []
        for index in 0..<80 {
            sequences.append(try await log.append([.value(LogKey("k-\(index)"), .pattern(200, seed: index))], durability: .written))
        }
        let segmentsBefore = log.statistics.segments
        let cut = sequences[40]
        let report = try await log.removeSegments(before: cut)
        #expect(report.segmentsRemoved > 0 && report.segmentsRemoved < segmentsBefore)
        #expect(log.statistics.segments == segmentsBefore - report.segmentsRemoved)
        for stage in ["after the removal", "after a reopen"] {
            var present: [Int] = []
            for index in 0..<80 where try await log.get(LogKey("k-\(index)")) != nil { present.append(index) }
            // What is left is a suffix: every record at or past the cut, and
            // the part below it that shares a segment with it.
            #expect(present.last == 79 && present == Array(present.first!...79), "\(stage): \(present)")
            #expect(present.first! <= 40, "\(stage): a record at or past the position was removed")
            #expect(80 - present.count == report.keysRemoved, "\(stage)")
            if stage == "after the removal" {
                try await log.close()
                log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
            }
        }
        try await log.close()
    }

    @Test("a position past every record keeps the newest segment; a position before the first removes nothing")
    func newestStaysAndLowPositionsRemoveNothing() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for index in 0..<50 { try await log.put(LogKey("k-\(index)"), .pattern(200, seed: index), durability: .written) }
        #expect(try await log.removeSegments(before: 0).segmentsRemoved == 0)
        #expect(try await log.removeSegments(before: 1).segmentsRemoved == 0)
        let report = try await log.removeSegments(before: .max)
        #expect(report.segmentsRemoved > 0)
        #expect(log.statistics.segments == 1, "the newest segment must stay")
        #expect(try await log.get("k-49") != nil)
        try await log.put("after", [1], durability: .durable)
        #expect(try await log.get("after")?.value == [1])
        try await log.close()
    }

    @Test("a read-only log refuses, and changes nothing")
    func readOnlyRefuses() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        for index in 0..<50 { try await log.put(LogKey("k-\(index)"), .pattern(200, seed: index), durability: .written) }
        try await log.close()
        var configuration = smallSegments()
        configuration.readOnly = true
        let reader = try await OutboxLog.open(at: directory.path, configuration: configuration)
        let error = await #expect(throws: OutboxLogError.self) { try await reader.removeSegments(before: .max) }
        #expect(error?.code == .invalidArgument)
        #expect(try await reader.get("k-0") != nil)
        try await reader.close()
    }
}
