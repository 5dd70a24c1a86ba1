import CLITestSupport
import Foundation
import SystemPackage
import Testing

@testable import OutboxLog

/// Sequence numbers stay below 2^63 (Docs/FORMAT.md, "Sequence rules"): a
/// crafted segment whose base or records are numbered at the top of
/// `UInt64` is damage a reader reports, never a number it adds one to and
/// traps on. Run through the `outbox` tool, so that a trap fails the test
/// instead of the test process.
@Suite("Sequence limit")
struct SequenceLimitTests {
    /// A segment file of `records` (sequence, key) after a header of `base`.
    static func segment(base: UInt64, records: [(UInt64, String)], garbageBefore: Int = 0) -> [UInt8] {
        let header = SegmentHeader(baseSequence: base, coverEnd: nil, salt: 0x5EED)
        var bytes = header.encoded()
        for (index, (sequence, key)) in records.enumerated() {
            if index == records.count - 1 { bytes += [UInt8](repeating: 0xEE, count: garbageBefore) }
            let payload: [UInt8] = Array("v".utf8)
            payload.withUnsafeBytes { raw in
                RecordFrame.append(
                    to: &bytes, crcSeed: header.recordCRCSeed, kind: .value, batchContinues: false,
                    batchContinuation: false, sequence: sequence, durableWatermark: 0, key: LogKey(key), payload: raw)
            }
        }
        return bytes
    }

    static func write(_ files: [(base: UInt64, bytes: [UInt8])], in directory: TemporaryDirectory) throws {
        for file in files {
            let name = String(repeating: "0", count: max(0, 20 - String(file.base).count)) + String(file.base) + ".seg"
            try Data(file.bytes).write(to: URL(fileURLWithPath: directory.path.appending(name).string))
        }
    }

    @Test("a segment based at the top of UInt64 is reported, not trapped on", arguments: [UInt64.max, UInt64.max - 1, 1 << 63])
    func baseAtTheTop(base: UInt64) async throws {
        let directory = TemporaryDirectory()
        try Self.write([(base, Self.segment(base: base, records: [(base, "k")]))], in: directory)
        let verify = try await OutboxTool.run(["log", "verify", directory.path.string, "--json"])
        #expect(verify.status == 1 || verify.status == 2, "\(verify.stdout)\(verify.stderr)")
        let dump = try await OutboxTool.run(["log", "dump", directory.path.string])
        #expect(dump.status != 0, "\(dump.stdout)")
    }

    @Test("a record numbered at the top of UInt64 after damage is reported, not trapped on")
    func recordAtTheTopAfterDamage() async throws {
        let directory = TemporaryDirectory()
        let first = Self.segment(base: 1, records: [(1, "a"), (2, "b")])
        let newest = Self.segment(base: 3, records: [(3, "c"), (UInt64.max, "z")], garbageBefore: 40)
        try Self.write([(1, first), (3, newest)], in: directory)
        let verify = try await OutboxTool.run(["log", "verify", directory.path.string, "--json"])
        #expect(verify.status == 1, "\(verify.stdout)\(verify.stderr)")
        let dump = try await OutboxTool.run(["log", "dump", "--salvage", directory.path.string])
        #expect(dump.status == 0 || dump.status == 1, "\(dump.stdout)\(dump.stderr)")
    }
}
