import OutboxLog
import SystemPackage

/// Fuzz entry point for the segment scanner: recovery's reading of a whole
/// segment file — header, frames, batches, sequence rules, and the
/// resynchronisation past damage.
///
/// Control byte: bit 0 repairs the header's CRC; bit 1 repairs the CRC of
/// every frame along the chain of declared lengths (so that mutations of
/// sequences, flags and batches are seen by the rules behind the CRC).
package enum LogSegmentFuzzing {
    /// Scans the input as the segment file at `path` on `fileSystem` (give
    /// it an in-memory one: the target runs thousands of times a second).
    ///
    /// Beyond not crashing, the scan must account for every byte: the
    /// records it returns, and the ranges it reports as damaged or skipped,
    /// tile the file after its header exactly; every record it returns
    /// re-verifies at its offset, re-encodes to its bytes, and obeys the
    /// sequence rules of its segment.
    package static func segment(
        _ input: UnsafeRawBufferPointer, fileSystem: any FileSystem, path: FilePath
    ) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let bytes = try withMutableCopy(of: input.data) { (bytes) throws(FuzzViolation) -> [UInt8] in
            if input.flag(0) { LogFormatFuzzing.repairHeaderCRC(bytes) }
            if input.flag(1) { repairFrameChain(bytes) }
            return Array(bytes)
        }
        let descriptor: FileDescriptor
        let header: Result<SegmentHeader, SegmentHeader.DecodeError>
        let size: Int64
        do throws(Errno) {
            descriptor = try fileSystem.openFile(path, mode: .createOrOpen)
            try fileSystem.truncate(descriptor, to: 0)
            try fileSystem.writeFully(descriptor, bytes, at: 0)
            (header, size) = try fileSystem.readSegmentHeader(descriptor)
        } catch {
            throw FuzzViolation("harness: cannot store the segment on the file system: \(error)")
        }
        defer { try? fileSystem.close(descriptor) }
        guard case .success(let header) = header else { return }

        // Small chunks: windows straddle refills, as they do in large files.
        let reader = ChunkedFileReader(fileSystem: fileSystem, descriptor: descriptor, path: path, fileSize: size, chunkSize: 4096)
        var leading: [ScannedRecord] = []
        var later: [ScannedRecord] = []
        let analysis: SegmentAnalysis
        do {
            analysis = try SegmentAnalysis.analyze(
                SegmentScanner(reader: reader, header: header), file: path.string,
                visit: { leading.append($0) }, visitLater: { later.append($0) })
        } catch {
            throw FuzzViolation("the scan of an intact in-memory file failed: \(error)")
        }
        try bytes.withFuzzBytes { (raw) throws(FuzzViolation) in
            for record in leading + later { try reverify(record, in: raw, header: header) }
        }
        try checkSequences(leading, later, header: header)
        try checkTiling(leading: leading, later: later, analysis: analysis, size: size)
    }

    /// The record decodes at its offset as what the scan said, and encodes
    /// back to its bytes.
    static func reverify(_ record: ScannedRecord, in bytes: UnsafeRawBufferPointer, header: SegmentHeader) throws(FuzzViolation) {
        let offset = Int(record.offset)
        let maximumLength = OutboxLog.Configuration.absoluteMaximumRecordSize
        guard offset >= SegmentHeader.size, offset < bytes.count,
            case .success(let frame) = RecordFrame.decode(bytes, at: offset, crcSeed: header.recordCRCSeed, maximumLength: maximumLength)
        else { throw FuzzViolation("a record returned at offset \(record.offset) does not verify there") }
        guard frame.length == record.length, frame.kind == record.kind, frame.sequence == record.sequence,
            LogKey(UnsafeRawBufferPointer(rebasing: bytes[frame.keyRange])) == record.key
        else { throw FuzzViolation("the record returned at offset \(record.offset) is not the frame stored there") }
        try LogFormatFuzzing.checkDecoded(frame, in: bytes, at: offset, crcSeed: header.recordCRCSeed)
    }

    /// Sequences only increase; an appended segment's leading records count
    /// up by one from its base; a rewritten segment's stay in its range.
    static func checkSequences(_ leading: [ScannedRecord], _ later: [ScannedRecord], header: SegmentHeader) throws(FuzzViolation) {
        var previous: UInt64?
        for (index, record) in (leading + later).enumerated() {
            if let previous, record.sequence <= previous {
                throw FuzzViolation("sequence \(record.sequence) returned after \(previous)")
            }
            if let coverEnd = header.coverEnd {
                guard record.sequence >= header.baseSequence, record.sequence < coverEnd else {
                    throw FuzzViolation("sequence \(record.sequence) outside the rewritten segment's \(header.baseSequence)..<\(coverEnd)")
                }
            } else if index < leading.count, record.sequence != header.baseSequence &+ UInt64(index) {
                throw FuzzViolation("leading record \(index) has sequence \(record.sequence), base \(header.baseSequence)")
            }
            previous = record.sequence
        }
    }

    /// Records, damaged ranges and skipped batch remnants cover the file
    /// after the header exactly once: nothing unaccounted for, nothing twice.
    static func checkTiling(
        leading: [ScannedRecord], later: [ScannedRecord], analysis: SegmentAnalysis, size: Int64
    ) throws(FuzzViolation) {
        var pieces: [(start: Int64, end: Int64, what: String)] = (leading + later).map {
            ($0.offset, $0.offset + Int64($0.length), "record \($0.sequence)")
        }
        for skipped in analysis.damage?.skipped ?? [] {
            pieces.append((skipped.offset, skipped.offset + skipped.bytes, "skipped (\(skipped.reason))"))
        }
        pieces.sort { ($0.start, $0.end) < ($1.start, $1.end) }
        var covered = Int64(SegmentHeader.size)
        for piece in pieces where piece.end > piece.start {
            guard piece.start == covered else {
                throw FuzzViolation(
                    piece.start > covered
                        ? "bytes \(covered)..<\(piece.start) are neither a record nor reported damage"
                        : "\(piece.what) at \(piece.start)..<\(piece.end) overlaps what ends at \(covered)")
            }
            covered = piece.end
        }
        guard covered == max(size, Int64(SegmentHeader.size)) else {
            throw FuzzViolation("the scan accounts for \(covered) of \(size) bytes")
        }
        let leadingEnd = leading.last.map { $0.offset + Int64($0.length) } ?? Int64(SegmentHeader.size)
        guard analysis.leading.end == leadingEnd else {
            throw FuzzViolation("the leading run ends at \(analysis.leading.end), its last record at \(leadingEnd)")
        }
        if let damage = analysis.damage, damage.offset != leadingEnd {
            throw FuzzViolation("damage reported at \(damage.offset), but the intact records end at \(leadingEnd)")
        }
    }

    /// Rewrites the CRC of each frame found by following declared lengths
    /// from the end of the header, with the header's salt.
    static func repairFrameChain(_ bytes: UnsafeMutableRawBufferPointer) {
        guard bytes.count >= SegmentHeader.size else { return }
        let salt = UnsafeRawBufferPointer(bytes).loadLittleEndian(at: 32, as: UInt64.self)
        let seed = SegmentHeader(baseSequence: 0, coverEnd: nil, salt: salt).recordCRCSeed
        var offset = SegmentHeader.size
        while bytes.count - offset >= RecordFrame.headerSize {
            let length = LogFormatFuzzing.declaredLength(UnsafeRawBufferPointer(bytes), at: offset)
            guard length >= RecordFrame.headerSize, length <= bytes.count - offset else { return }
            LogFormatFuzzing.repairFrameCRC(bytes, at: offset, crcSeed: seed, maximumLength: length)
            offset += length
        }
    }
}
