import Foundation
import OutboxLog

/// Frame seeds cut from the format's test vectors (Tests/Vectors): real
/// frames of every kind and batch position, each whole and one byte short.
///
/// Whole, with the control byte's repair bit set (the vectors' salts are
/// not the target's), the frame verifies and the target decodes it again
/// cut short at its boundaries. One byte short, without repair, its length
/// runs exactly one byte past the input: the decoder must call it
/// incomplete without reading that byte. Read from the source tree, so
/// only `OutboxFuzz --seed` run from a checkout writes them.
enum VectorSeeds {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Tests/Vectors")

    /// One frame for each kind and flags found in the `clean-` vectors.
    static func frames() throws -> [[UInt8]] {
        let vectors = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("clean-") }.sorted()
        var seen: Set<[UInt8]> = []
        var seeds: [[UInt8]] = []
        for vector in vectors {
            let log = folder.appendingPathComponent("\(vector)/log")
            let files = (try? FileManager.default.contentsOfDirectory(atPath: log.path)) ?? []
            for file in files.sorted() where file.hasSuffix(".seg") {
                let segment = Array(try Data(contentsOf: log.appendingPathComponent(file)))
                for frame in segment.withUnsafeBytes({ LogFormatFuzzing.verifiedFrames(inSegment: $0).frames }) {
                    let kindAndFlags = Array(segment[(frame.lowerBound + 8)..<(frame.lowerBound + 10)])
                    guard seen.insert(kindAndFlags).inserted else { continue }
                    seeds.append([1] + segment[frame])
                    seeds.append([0] + segment[frame].dropLast())
                }
            }
        }
        return seeds
    }
}
