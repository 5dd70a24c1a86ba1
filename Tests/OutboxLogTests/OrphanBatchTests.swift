import Foundation
import SystemPackage
import Testing

@testable import OutboxLog

/// After damage, the rest of a batch whose start was lost is skipped frame
/// by frame (Docs/FORMAT.md, "Resynchronisation after damage"). A skipped
/// continuation out of order is itself the damage: the search for the next
/// record starts right after it, so a record that follows it at once is
/// found and kept.
@Suite("Orphaned batch frames")
struct OrphanBatchTests {
    struct Frame {
        var sequence: UInt64
        var key: String
        var continuation = false
        var continues = false
    }

    static func segment(base: UInt64, _ frames: [Frame], garbageAfter garbageIndex: Int) -> [UInt8] {
        let header = SegmentHeader(baseSequence: base, coverEnd: nil, salt: 0x0BA7)
        var bytes = header.encoded()
        for (index, frame) in frames.enumerated() {
            let payload: [UInt8] = Array("value-\(frame.key)".utf8)
            payload.withUnsafeBytes { raw in
                RecordFrame.append(
                    to: &bytes, crcSeed: header.recordCRCSeed, kind: .value, batchContinues: frame.continues,
                    batchContinuation: frame.continuation, sequence: frame.sequence, durableWatermark: 0,
                    key: LogKey(frame.key), payload: raw)
            }
            if index == garbageIndex { bytes += [UInt8](repeating: 0xEE, count: 33) }
        }
        return bytes
    }

    @Test("a record right after an orphaned continuation numbered out of order is kept by salvage")
    func recordAfterBadOrphanIsKept() async throws {
        let directory = TemporaryDirectory()
        // 1, 2 · garbage · orphans 5 and 4 (4 is out of order) · 6, a lone record.
        let frames = [
            Frame(sequence: 1, key: "a"), Frame(sequence: 2, key: "b"),
            Frame(sequence: 5, key: "orphan-5", continuation: true, continues: true),
            Frame(sequence: 4, key: "orphan-4", continuation: true, continues: true),
            Frame(sequence: 6, key: "kept"),
        ]
        let bytes = Self.segment(base: 1, frames, garbageAfter: 1)
        try Data(bytes).write(to: URL(fileURLWithPath: directory.path.appending("00000000000000000001.seg").string))
        // A newer segment: the damaged one is sealed, not a torn tail.
        let newest = Self.segment(base: 7, [Frame(sequence: 7, key: "newest")], garbageAfter: -1)
        try Data(newest).write(to: URL(fileURLWithPath: directory.path.appending("00000000000000000007.seg").string))
        var configuration = OutboxLog.Configuration()
        configuration.recoveryMode = .salvage
        configuration.readOnly = true
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        #expect(try await log.get(LogKey("kept"))?.value == Array("value-kept".utf8), "\(log.recoveryReport)")
        #expect(try await log.get(LogKey("a")) != nil)
        #expect(try await log.get(LogKey("orphan-5")) == nil)
        #expect(try await log.get(LogKey("orphan-4")) == nil)
        let orphan4 = Int64(bytes.count - (RecordFrame.headerSize + 4 + 10) - (RecordFrame.headerSize + 8 + 14))
        #expect(
            log.recoveryReport.skipped.contains { $0.offset == orphan4 && $0.damage == .sequenceOutOfOrder(4, previous: 5) },
            "\(log.recoveryReport)")
        try await log.close()
    }
}
