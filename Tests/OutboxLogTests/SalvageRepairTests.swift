import Foundation
import OutboxLog
import SystemPackage
import Testing

/// Salvage must leave a log the next strict open accepts: damage it cannot
/// read is moved aside and the sequence numbers it held are recorded as
/// lost, never left as a gap that fails every later open. Found by
/// `outbox torture --mode corrupt` (Docs/RELIABILITY.md).
@Suite("Salvage repairs for good")
struct SalvageRepairTests {
    /// A closed log of several segments; returns its values by key and the
    /// first sequence number of each key.
    static func makeLog(_ directory: FilePath) async throws -> (values: [LogKey: [UInt8]], sequences: [LogKey: UInt64]) {
        let log = try await OutboxLog.open(at: directory, configuration: smallSegments())
        var values: [LogKey: [UInt8]] = [:]
        var sequences: [LogKey: UInt64] = [:]
        for i in 0..<150 {
            let key = LogKey("k\(i)")
            values[key] = .pattern(60, seed: i)
            sequences[key] = try await log.put(key, values[key]!, durability: .written)
        }
        try await log.close()
        return (values, sequences)
    }

    static var salvage: OutboxLog.Configuration {
        var configuration = smallSegments()
        configuration.recoveryMode = .salvage
        return configuration
    }

    /// Opens salvage, then strict twice; every open must see `expected`.
    static func expectRepaired(_ directory: FilePath, keeping expected: [LogKey: [UInt8]]) async throws -> RecoveryReport {
        let salvaged = try await OutboxLog.open(at: directory, configuration: salvage)
        let report = salvaged.recoveryReport
        #expect(Set(salvaged.keys) == Set(expected.keys), "\(report)")
        try await salvaged.close()
        for _ in 0..<2 {
            let strict = try await OutboxLog.open(at: directory, configuration: smallSegments())
            #expect(strict.recoveryReport.isClean, "\(strict.recoveryReport)")
            #expect(Set(strict.keys) == Set(expected.keys))
            for (key, value) in expected where try await strict.get(key)?.value != value {
                Issue.record("\(key) lost or changed")
                break
            }
            try await strict.close()
        }
        return report
    }

    /// Makes the log, damages its second segment with `damage`, and returns
    /// that segment and the values that must survive: every key whose
    /// record was not in the damaged segment's sequence range.
    static func damageSecondSegment(
        _ directory: FilePath, _ damage: (LogFiles, FilePath) throws -> Void
    ) async throws -> (victim: FilePath, survivors: [LogKey: [UInt8]]) {
        let (values, sequences) = try await makeLog(directory)
        let files = LogFiles(directory: directory)
        let victim = files.segments[1]
        let base = try #require(UInt64(victim.lastComponent!.stem))
        let next = try #require(UInt64(files.segments[2].lastComponent!.stem))
        try damage(files, victim)
        let lost = Set(sequences.filter { $0.value >= base && $0.value < next }.map(\.key))
        return (victim, values.filter { !lost.contains($0.key) })
    }

    @Test("a segment whose header cannot be read is moved aside, and the log opens strict afterwards")
    func unreadableHeader() async throws {
        let directory = TemporaryDirectory()
        let (victim, survivors) = try await Self.damageSecondSegment(directory.path) { files, victim in
            try files.overwrite(victim, at: 0, with: [UInt8](repeating: 0, count: segmentHeaderSize))
        }
        let report = try await Self.expectRepaired(directory.path, keeping: survivors)
        #expect(report.setAsideFiles == [victim.lastComponent!.string])
        #expect(FileManager.default.fileExists(atPath: directory.appending("damaged").appending(victim.lastComponent!.string).string))
    }

    @Test("a deleted segment's range is recorded as lost, and the log opens strict afterwards")
    func deletedSegment() async throws {
        let directory = TemporaryDirectory()
        let (_, survivors) = try await Self.damageSecondSegment(directory.path) { _, victim in
            try FileManager.default.removeItem(atPath: victim.string)
        }
        let report = try await Self.expectRepaired(directory.path, keeping: survivors)
        #expect(report.skipped.contains { if case .missingSequences = $0.damage { true } else { false } }, "\(report)")
    }

    @Test("a segment copied under another segment's name gives back only the records of its own range")
    func duplicatedSegment() async throws {
        let directory = TemporaryDirectory()
        let (values, _) = try await Self.makeLog(directory.path)
        let files = LogFiles(directory: directory.path)
        // The last segment, copied in the middle of the log with a header
        // rewritten (base and CRC) to match its new name.
        let source = files.read(files.segments.last!)
        let base = try #require(UInt64(files.segments[0].lastComponent!.stem)) + 1
        var copy = source
        for index in 0..<8 { copy[16 + index] = UInt8(truncatingIfNeeded: base >> (8 * UInt64(index))) }
        let crc = RawSegment.crc32(copy[0..<44])
        for index in 0..<4 { copy[44 + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
        let name = String(repeating: "0", count: 20 - String(base).count) + String(base) + ".seg"
        files.write(copy, to: directory.appending(name))

        await #expect(throws: OutboxLogError.self) {
            try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        }
        _ = try await Self.expectRepaired(directory.path, keeping: values)
    }
}
