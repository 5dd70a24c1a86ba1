import OutboxLogTesting
import Testing

@testable import OutboxTorture

/// The corruption mode's damage does what its description says.
@Suite("Damage")
struct DamageTests {
    static let segment: [UInt8] = {
        var bytes = [UInt8](repeating: 0, count: 48)
        bytes.replaceSubrange(0..<8, with: Array("OBXLOG\r\n".utf8))
        SegmentBytes.setBase(1, in: &bytes)
        // Two 30-byte frames: length field at offset 4 of each.
        for frame in 0..<2 {
            var record = [UInt8](repeating: UInt8(frame + 1), count: 30)
            record[4] = 30
            record[5] = 0
            record[6] = 0
            record[7] = 0
            bytes += record
        }
        return bytes
    }()
    static let files = ["00000000000000000001.seg": segment, "00000000000000000100.seg": segment]

    @Test("each kind changes the files as described")
    func kinds() {
        var random = SplitMix64(seed: 1)
        func apply(_ damage: Damage) -> [String: [UInt8]] {
            var files = Self.files
            damage.apply(to: &files, foreign: Self.files, &random)
            return files
        }
        let name = "00000000000000000001.seg"
        #expect(apply(.truncation(file: name, at: 10))[name]!.count == 10)
        #expect(apply(.bitFlips(file: name, flips: [.init(offset: 50, bit: 3)]))[name]![50] == Self.segment[50] ^ 8)
        #expect(apply(.zeroedPage(file: name, page: 0))[name]! == [UInt8](repeating: 0, count: Self.segment.count))
        #expect(apply(.garbage(file: name, kind: .zeros, count: 7))[name]!.count == Self.segment.count + 7)
        let replayed = apply(.garbage(file: name, kind: .replayedRecord, count: 7))[name]!
        #expect(Array(replayed.suffix(30)) == Array(Self.segment[48..<78]) || Array(replayed.suffix(30)) == Array(Self.segment[78..<108]))
        #expect(apply(.deletedSegment(file: name))[name] == nil)
        let copied = apply(.duplicatedSegment(file: name, as: "00000000000000000050.seg", consistent: true))
        #expect(Array(copied["00000000000000000050.seg"]![16..<24]) == [50, 0, 0, 0, 0, 0, 0, 0])
        // The rewritten header still verifies: its CRC matches.
        let header = copied["00000000000000000050.seg"]!
        #expect(SegmentBytes.readUInt32(header, at: 44) == CRC32.checksum(header[0..<44]))
    }

    @Test("a damage to a file an earlier damage removed, or with a donor that is gone, changes nothing (several are applied to one store's copy)")
    func damageToAMissingFile() {
        var random = SplitMix64(seed: 2)
        let gone = "00000000000000000007.seg"
        let damages: [Damage] = [
            .truncation(file: gone, at: 3), .bitFlips(file: gone, flips: [.init(offset: 1, bit: 1)]),
            .zeroedPage(file: gone, page: 0), .garbage(file: gone, kind: .random, count: 5),
            .garbage(file: gone, kind: .replayedRecord, count: 5), .deletedSegment(file: gone),
            .duplicatedSegment(file: gone, as: "00000000000000000009.seg", consistent: true),
            .foreignHeader(file: gone, from: "00000000000000000001.seg"),
            .foreignHeader(file: "00000000000000000001.seg", from: gone),
        ]
        for damage in damages {
            var files = Self.files
            damage.apply(to: &files, foreign: Self.files, &random)
            #expect(files == Self.files, "\(damage)")
        }
    }

    @Test("the CRC used for rewritten headers is zlib's")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test("frames are found by their declared lengths")
    func frames() {
        #expect(SegmentBytes.frames(in: Self.segment) == [48..<78, 78..<108])
    }
}
