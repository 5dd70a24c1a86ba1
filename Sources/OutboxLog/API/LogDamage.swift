/// What is wrong with bytes a reader would not take as records: why a torn
/// tail was cut or a range skipped (``RecoveryReport``), as a value a
/// program switches on; ``description`` says it for people, ``name`` for
/// JSON. Docs/FORMAT.md, "What a reader reports", defines each.
///
/// Only the cases that wrap another damage are `indirect`: with the whole
/// enum `indirect`, Swift 6.3 miscompiled an `OutboxLogError` without damage
/// thrown through `OutboxError` (a crash releasing a value that was never
/// set; StoreOpenTests and FirstLaunchTests catch it).
public enum LogDamage: Sendable, Hashable, CustomStringConvertible {
    // A record frame (Docs/FORMAT.md, "Decoding a frame, step by step").

    /// The file ends inside a frame's header.
    case frameHeaderCut
    /// The file ends before the end its frame's length declares.
    case frameCut
    /// The length is below a frame header's or above any record's.
    case implausibleLength(UInt64)
    /// The frame's CRC does not match its bytes.
    case crcMismatch
    case unknownKind(UInt8)
    case unknownFlags(UInt8)
    /// The key's length runs past the frame.
    case keyBeyondFrame(Int)
    /// The key is longer than the format allows (1,024 bytes).
    case keyTooLong(Int)
    /// A value, annotation or tombstone record (its kind's code, Docs/FORMAT.md)
    /// with an empty key.
    case emptyKey(recordKind: UInt8)
    case tombstoneWithPayload
    case markerWithKeyOrPayload
    /// A tombstone or marker (its kind's code) that carries an expiry: only
    /// values and annotations may.
    case expiryOnRecordKind(UInt8)

    // Order.

    /// A record of a rewritten segment numbered outside the segment's range.
    case sequenceOutsideSegment(UInt64, segment: Range<UInt64>)
    /// A record not numbered right after the one before it.
    case sequenceOutOfOrder(UInt64, previous: UInt64)
    /// A record numbered at or above 2^63, where sequence numbers stop.
    case sequenceBeyondLimit(UInt64)
    /// An appended segment whose first record is not numbered its base.
    case firstSequenceNotBase(UInt64, base: UInt64)

    // Batches.

    case continuationWithoutStart
    /// Another record came before the batch's last.
    case batchInterrupted
    /// The file ends inside a batch.
    case batchCut
    /// Intact records of a batch whose record at `damagedFrameAt` is
    /// damaged: a batch is kept whole or not at all.
    case discardedWithBatch(damagedFrameAt: Int64)
    /// The rest of a batch whose first records were lost.
    case batchStartLost

    // Space allocated ahead.

    /// Zero bytes from here to the end of the file.
    case zeroTail

    // Segments.

    /// `damage`, with verified records after it: not a torn tail.
    indirect case followedByRecords(LogDamage, records: Int)
    /// `damage` in a segment sealed before the newest.
    indirect case inSealedSegment(LogDamage)
    /// The segment's header does not read.
    case segmentHeader(SegmentHeaderDamage)
    /// The header names another base than the file name.
    case headerNamesOtherBase(header: UInt64, fileName: UInt64)
    /// The segment starts inside its predecessor's range.
    case overlapsPrevious(base: UInt64)
    /// Sequence numbers missing before this segment (a deleted segment file?).
    case missingSequences(Range<UInt64>)
    /// An empty segment that is not the newest.
    case emptySegmentNotNewest(previous: String)
    /// Salvage: records numbered outside the segment's range.
    case recordsOutsideSegment(count: Int, segment: Range<UInt64>)
    /// A record that verified no longer does when it is read again to be
    /// copied (by salvage or compaction).
    indirect case noLongerVerifies(LogDamage)
    /// Read again, a record's frame is cut short: its length field grew, or
    /// the read came up short.
    case recordCutShort
    /// Read again, a record's frame has another length.
    case lengthChanged(Int)
    /// Read again, a record's frame has another sequence number.
    case sequenceChanged(UInt64)
    /// The compaction intent (`COMPACTION`) does not read: whether its
    /// compaction committed cannot be known.
    case compactionIntent(CompactionIntentDamage)

    /// For people: `CRC mismatch`, `sequence 16 after 5`.
    public var description: String {
        switch self {
        case .frameHeaderCut: "incomplete frame header"
        case .frameCut: "frame extends past the end of the file"
        case .implausibleLength(let length): "implausible length \(length)"
        case .crcMismatch: "CRC mismatch"
        case .unknownKind(let kind): "unknown record kind \(kind)"
        case .unknownFlags(let flags): "unknown flags \(flags)"
        case .keyBeyondFrame(let count): "key length \(count) exceeds frame"
        case .keyTooLong(let count): "key length \(count) exceeds the format's maximum of 1024"
        case .emptyKey(let kind): "\(FrameKind(rawValue: kind).map { "\($0)" } ?? "kind \(kind)") record with an empty key"
        case .tombstoneWithPayload: "tombstone with a payload"
        case .markerWithKeyOrPayload: "marker with a key or payload"
        case .expiryOnRecordKind(let kind): "\(FrameKind(rawValue: kind).map { "\($0)" } ?? "kind \(kind)") record with an expiry"
        case .sequenceOutsideSegment(let sequence, let segment):
            "sequence \(sequence) outside the segment's range \(segment.lowerBound)..<\(segment.upperBound)"
        case .sequenceOutOfOrder(let sequence, let previous): "sequence \(sequence) after \(previous)"
        case .sequenceBeyondLimit(let sequence): "sequence \(sequence) is beyond 2^63"
        case .firstSequenceNotBase(let sequence, let base): "first sequence \(sequence) is not the segment's base \(base)"
        case .continuationWithoutStart: "batch continuation without its start"
        case .batchInterrupted: "batch interrupted"
        case .batchCut: "incomplete batch at the end of the file"
        case .discardedWithBatch(let offset): "intact records of a batch discarded with its damaged record at offset \(offset)"
        case .batchStartLost: "rest of a batch whose start was lost"
        case .zeroTail: "zero bytes from here to the end of the file"
        case .followedByRecords(let damage, let records): "\(damage), followed by \(records) valid record(s)"
        case .inSealedSegment(let damage): "\(damage) in a sealed segment"
        case .segmentHeader(let damage): "bad segment header (\(damage))"
        case .headerNamesOtherBase(let header, let name): "header names base \(header), the file name \(name)"
        case .overlapsPrevious(let base): "segment starts at \(base), inside the previous segment's range"
        case .missingSequences(let missing):
            "sequences \(missing.lowerBound)..<\(missing.upperBound) are missing before this segment (was a segment file deleted?)"
        case .emptySegmentNotNewest(let previous): "the previous segment \(previous) is empty but not the newest"
        case .recordsOutsideSegment(let count, let segment):
            "\(count) record(s) outside the segment's range \(segment.lowerBound)..<\(segment.upperBound)"
        case .noLongerVerifies(let damage): "record no longer verifies when copied: \(damage)"
        case .recordCutShort: "the record is cut short"
        case .lengthChanged(let length): "the record's length changed to \(length)"
        case .sequenceChanged(let sequence): "the record's sequence number changed to \(sequence)"
        case .compactionIntent(let problem):
            "compaction record is damaged (\(problem)): whether its compaction committed cannot be known; "
                + "`outbox log verify` reports the segments as they are"
        }
    }

    /// The case's name, as `outbox log verify --json` gives it (`damage`).
    public var name: String {
        switch self {
        case .frameHeaderCut: "frameHeaderCut"
        case .frameCut: "frameCut"
        case .implausibleLength: "implausibleLength"
        case .crcMismatch: "crcMismatch"
        case .unknownKind: "unknownKind"
        case .unknownFlags: "unknownFlags"
        case .keyBeyondFrame: "keyBeyondFrame"
        case .keyTooLong: "keyTooLong"
        case .emptyKey: "emptyKey"
        case .tombstoneWithPayload: "tombstoneWithPayload"
        case .markerWithKeyOrPayload: "markerWithKeyOrPayload"
        case .expiryOnRecordKind: "expiryOnRecordKind"
        case .sequenceOutsideSegment: "sequenceOutsideSegment"
        case .sequenceOutOfOrder: "sequenceOutOfOrder"
        case .sequenceBeyondLimit: "sequenceBeyondLimit"
        case .firstSequenceNotBase: "firstSequenceNotBase"
        case .continuationWithoutStart: "continuationWithoutStart"
        case .batchInterrupted: "batchInterrupted"
        case .batchCut: "batchCut"
        case .discardedWithBatch: "discardedWithBatch"
        case .batchStartLost: "batchStartLost"
        case .zeroTail: "zeroTail"
        case .followedByRecords: "followedByRecords"
        case .inSealedSegment: "inSealedSegment"
        case .segmentHeader: "segmentHeader"
        case .headerNamesOtherBase: "headerNamesOtherBase"
        case .overlapsPrevious: "overlapsPrevious"
        case .missingSequences: "missingSequences"
        case .emptySegmentNotNewest: "emptySegmentNotNewest"
        case .recordsOutsideSegment: "recordsOutsideSegment"
        case .noLongerVerifies: "noLongerVerifies"
        case .recordCutShort: "recordCutShort"
        case .lengthChanged: "lengthChanged"
        case .sequenceChanged: "sequenceChanged"
        case .compactionIntent: "compactionIntent"
        }
    }
}
