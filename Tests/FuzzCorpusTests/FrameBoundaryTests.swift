import Foundation
import OutboxFuzzTargets
import OutboxLog
import Testing

/// The frame decoder at the end of the bytes it has: a frame cut short at
/// any length is `incomplete` — a torn tail recovery may cut, not damage —
/// and the decoder finds that out without reading a byte past the cut.
///
/// Each cut is decoded from an allocation of exactly its size (a few bytes
/// of what precedes the frame, then the frame's first bytes), so under
/// AddressSanitizer a read one byte too far is reported, and in any build a
/// decoder that trusts a length one past the end is caught by its answer.
/// The fuzz target `frame` tries the same cuts on every frame it makes
/// verify (Fuzz/README.md).
@Suite("Frame boundaries")
struct FrameBoundaryTests {
    @Test("every distinct frame of the format's test vectors, cut at every length, is incomplete")
    func vectorFramesCutAtEveryLength() throws {
        var seen: Set<[UInt8]> = []
        for segment in try Self.vectorSegments() {
            try segment.withUnsafeBytes { bytes in
                let (crcSeed, frames) = LogFormatFuzzing.verifiedFrames(inSegment: bytes)
                for frame in frames where seen.insert(Array(segment[frame])).inserted {
                    try LogFormatFuzzing.checkCutShort(
                        bytes, frameAt: frame.lowerBound, length: frame.count, crcSeed: crcSeed, keeping: 0..<frame.count)
                }
            }
        }
        // Values, annotations, tombstones, markers, batches: the vectors
        // hold a few hundred distinct frames; far fewer means the walk broke.
        #expect(seen.count >= 100, "only \(seen.count) frames found in \(Self.vectors.path)")
    }

    @Test("the encoder's frames of every kind, flags and the largest key, cut at every length, are incomplete")
    func encodedFramesCutAtEveryLength() throws {
        let seeds = LogFormatFuzzing.frameSeeds()
        #expect(seeds.count >= 7)
        for seed in seeds {
            let frame = Array(seed.dropFirst())  // the first byte steers the fuzz target
            try frame.withUnsafeBytes { bytes in
                try LogFormatFuzzing.checkCutShort(
                    bytes, frameAt: 0, length: frame.count, crcSeed: LogFormatFuzzing.frameCRCSeed, keeping: 0..<frame.count)
            }
        }
    }

    /// The format's test vectors (Tests/Vectors), one folder each.
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    /// The bytes of every segment file in the vectors (damaged ones too:
    /// their frames that verify come before the damage).
    static func vectorSegments() throws -> [[UInt8]] {
        var segments: [[UInt8]] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.vectors.path).sorted() {
            let log = Self.vectors.appendingPathComponent("\(name)/log")
            let files = (try? FileManager.default.contentsOfDirectory(atPath: log.path)) ?? []
            for file in files.sorted() where file.hasSuffix(".seg") || file.hasSuffix(".seg.compacting") {
                segments.append(Array(try Data(contentsOf: log.appendingPathComponent(file))))
            }
        }
        return segments
    }
}
