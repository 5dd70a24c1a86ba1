import SystemPackage

/// The names of the files in a log directory.
///
/// ```
/// LOCK                            held with a POSIX record lock by the one open log
/// 00000000000000000001.seg        a segment, named by its base sequence
/// 00000000000000000001.seg.tmp    a segment being created (deleted at open)
/// 00000000000000000001.seg.compacting   a compaction output not yet swapped in
/// COMPACTION                      a committed compaction's intent record
/// COMPACTION.tmp                  an intent being written (deleted at open)
/// INDEX                           the index checkpoint (see IndexCheckpoint)
/// INDEX.tmp                       a checkpoint being written (deleted at open)
/// damaged/                        files moved aside by salvage
/// ```
struct DirectoryLayout: Sendable {
    let directory: FilePath

    static let lockName = "LOCK"
    static let segmentSuffix = ".seg"
    static let temporarySuffix = ".tmp"
    static let compactingSuffix = ".compacting"
    static let intentName = "COMPACTION"
    static let damagedDirectoryName = "damaged"
    static let indexCheckpointName = "INDEX"

    var lockFile: FilePath { directory.appending(Self.lockName) }
    var intentFile: FilePath { directory.appending(Self.intentName) }
    var temporaryIntentFile: FilePath { directory.appending(Self.intentName + Self.temporarySuffix) }
    var damagedDirectory: FilePath { directory.appending(Self.damagedDirectoryName) }
    var indexCheckpointFile: FilePath { directory.appending(Self.indexCheckpointName) }
    var temporaryIndexCheckpointFile: FilePath {
        directory.appending(Self.indexCheckpointName + Self.temporarySuffix)
    }

    static func segmentName(base: UInt64) -> String {
        let digits = String(base)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + segmentSuffix
    }

    func segmentFile(base: UInt64) -> FilePath { directory.appending(Self.segmentName(base: base)) }
    func temporarySegmentFile(base: UInt64) -> FilePath {
        directory.appending(Self.segmentName(base: base) + Self.temporarySuffix)
    }
    func compactingSegmentFile(base: UInt64) -> FilePath {
        directory.appending(Self.segmentName(base: base) + Self.compactingSuffix)
    }

    /// What a directory entry is.
    enum Entry: Equatable {
        case lock
        case segment(base: UInt64)
        case temporarySegment(base: UInt64)
        case compactingSegment(base: UInt64)
        case intent
        case temporaryIntent
        case indexCheckpoint
        case temporaryIndexCheckpoint
        case damagedDirectory
        case unknown
    }

    static func classify(_ name: String) -> Entry {
        switch name {
        case lockName: return .lock
        case intentName: return .intent
        case intentName + temporarySuffix: return .temporaryIntent
        case indexCheckpointName: return .indexCheckpoint
        case indexCheckpointName + temporarySuffix: return .temporaryIndexCheckpoint
        case damagedDirectoryName: return .damagedDirectory
        default: break
        }
        if let base = parseSegmentName(name) { return .segment(base: base) }
        if name.hasSuffix(temporarySuffix), let base = parseSegmentName(String(name.dropLast(temporarySuffix.count))) {
            return .temporarySegment(base: base)
        }
        if name.hasSuffix(compactingSuffix),
            let base = parseSegmentName(String(name.dropLast(compactingSuffix.count)))
        {
            return .compactingSegment(base: base)
        }
        return .unknown
    }

    /// `00000000000000000042.seg` → 42. Exactly 20 digits, so each base has
    /// one name and names sort like their numbers.
    static func parseSegmentName(_ name: String) -> UInt64? {
        guard name.hasSuffix(segmentSuffix) else { return nil }
        let digits = name.utf8.dropLast(segmentSuffix.utf8.count)
        guard digits.count == 20, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt64(String(decoding: digits, as: UTF8.self))
    }
}
