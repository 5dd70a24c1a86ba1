import Foundation
import SystemPackage
import Testing

@testable import OutboxTorture

/// The corrupt mode's store cases (``StoreCorruption``): every kind of
/// damage to the store's own files — its checkpoint, its spools, its
/// payload files — runs, on a plain and on a sealed queue, and none breaks
/// the rule that a bad file quarantines itself, never the store.
@Suite("Corrupt mode: the store's own files", .serialized)
struct StoreCorruptionTests {
    @Test("every damage to SCHEDULE, the spools and payloads/ leaves a queue that opens, takes a write and holds what was acknowledged", arguments: [false, true])
    func everyKind(sealed: Bool) async throws {
        let seed = ProcessInfo.processInfo.environment["OUTBOX_TORTURE_SEED"].flatMap(UInt64.init) ?? 73
        print("store corruption: seed \(seed) (OUTBOX_TORTURE_SEED replays it)")
        let directory = FileManager.default.temporaryDirectory.path + "/outbox-store-corruption-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = TortureOptions(seed: seed, modes: [.corrupt], cycles: 1, directory: FilePath(directory))
        options.encrypted = sealed
        var store = StoreCorruption(options: options)
        var report = TortureReport(seed: seed)
        // The control, then each kind once.
        let kinds = StoreDamage.Kind.applicable(sealed: sealed)
        for index in 0...kinds.count {
            let cycle = index * StoreCorruption.every + StoreCorruption.every - 1
            await store.run(case: index, cycle: cycle, options: options, report: &report)
        }
        await store.finish()
        #expect(report.violations.isEmpty, "\(report.text)")
        let details = report[.corrupt].details
        #expect(details["store: undamaged controls"] == 1, "\(report.text)")
        for kind in kinds {
            #expect((details["store: " + kind.rawValue] ?? 0) > 0, "\(kind.rawValue) did not run:\n\(report.text)")
        }
        #expect(report[.corrupt].cycles == kinds.count + 1, "\(report.text)")
        #expect(report[.corrupt].recovered > 0, "\(report.text)")
    }

    @Test("the checkpoint's counts are found where the format puts them, and repaired CRCs verify")
    func checkpointBytes() async throws {
        let directory = FileManager.default.temporaryDirectory.path + "/outbox-store-base-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let base = try await StoreBase.make(seed: 5, number: 0, sealed: false, directory: directory)
        let checkpoint = try #require(base.tree.files[base.checkpointPath])
        let fields = CheckpointBytes.counts(checkpoint)
        let entries = try #require(fields.first { $0.name == "entry count" })
        #expect(CheckpointBytes.read(checkpoint, at: entries.offset, width: 8) == UInt64(base.live.count))
        let completions = try #require(fields.first { $0.name == "completion count" })
        #expect(CheckpointBytes.read(checkpoint, at: completions.offset, width: 8) == UInt64(base.delivered.count))
        // The last count ends where the completions begin: 25 bytes at least each, to the end.
        #expect(checkpoint.count - completions.offset - 8 >= 25 * base.delivered.count)
        var damaged = checkpoint
        let header = CheckpointBytes.headerSize(checkpoint)
        CheckpointBytes.write(0, CheckpointBytes.nextSequence, in: &damaged)
        CheckpointBytes.repairCRCs(&damaged, headerSize: header)
        #expect(CheckpointBytes.read(damaged, at: header - 4, width: 4) == UInt64(CRC32.checksum(damaged[0..<(header - 4)])))
        #expect(CheckpointBytes.read(damaged, at: 32, width: 4) == UInt64(CRC32.checksum(damaged[header...])))
        #expect(StoreDamage.extremes(width: 8) == [.max, 1 << 63, 0])
        #expect(StoreDamage.extremes(width: 2) == [0xFFFF, 0x8000, 0])
    }
}
