import SystemPackage

/// Why an index checkpoint (`INDEX`) was not used: the open then read the
/// whole log (``RecoveryReport/checkpointRejected``; Docs/FORMAT.md, "Index
/// checkpoint").
public enum IndexCheckpointRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not an index checkpoint: a bad magic, or too short.
    case notACheckpoint
    case headerFailsCRC
    case unsupportedVersion(UInt16)
    case headerInconsistent
    case segmentTableCut
    case segmentTableFailsCRC
    case segmentTableInconsistent
    case keySectionSizeImplausible
    case keySectionFailsCRC
    case keySectionInconsistent
    /// The file could not be opened or read.
    case unreadable(Errno)
    /// The file's size is not the one its header gives.
    case fileSizeMismatch(Int64)
    /// The newest segment lost records the checkpoint covers.
    case newestSegmentLostRecords
    /// A segment the checkpoint covers has a header that does not read.
    case segmentHeaderUnreadable(segment: String)
    /// The log's segments changed since the checkpoint (a compaction, a
    /// repair, or another log's checkpoint).
    case segmentsChanged
    /// A segment the checkpoint covers no longer has the size it recorded.
    case segmentSizeChanged(segment: String)
    /// The bytes after those the checkpoint covers, in the segment that was
    /// the newest when it was written, do not continue its records.
    case recordsAfterDoNotContinue(segment: String)

    public var description: String {
        switch self {
        case .notACheckpoint: "not an index checkpoint (bad magic or too short)"
        case .headerFailsCRC: "the checkpoint's header fails its CRC"
        case .unsupportedVersion(let version): "checkpoint version \(version) is not one this library reads (1)"
        case .headerInconsistent: "the checkpoint's header is inconsistent"
        case .segmentTableCut: "the checkpoint's segment table is cut short"
        case .segmentTableFailsCRC: "the checkpoint's segment table fails its CRC"
        case .segmentTableInconsistent: "the checkpoint's segment table is inconsistent"
        case .keySectionSizeImplausible: "the checkpoint's key section size is implausible"
        case .keySectionFailsCRC: "the checkpoint's key section fails its CRC"
        case .keySectionInconsistent: "the checkpoint's key section is inconsistent"
        case .unreadable(let errno): "cannot read the checkpoint: \(errno)"
        case .fileSizeMismatch(let size): "the checkpoint file is \(size) bytes, not the size its header gives"
        case .newestSegmentLostRecords: "the newest segment lost records the checkpoint covers"
        case .segmentHeaderUnreadable(let segment): "\(segment) has an unreadable header"
        case .segmentsChanged:
            "the log's segments changed since the checkpoint (a compaction, a repair, or another log's checkpoint)"
        case .segmentSizeChanged(let segment): "\(segment) does not have the size the checkpoint recorded"
        case .recordsAfterDoNotContinue(let segment):
            "the records of \(segment) after the bytes the checkpoint covers do not continue its records"
        }
    }
}
