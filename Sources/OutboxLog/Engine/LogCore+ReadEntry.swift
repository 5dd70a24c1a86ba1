/// Reading one live record's entry for a page of `entries(after:limit:)`.
extension LogCore {
    /// Where a live record's bytes come from: the reader that has just
    /// verified them; the reader again, for a record an earlier page
    /// verified (its CRC is checked again: the bytes may have changed on
    /// disk since); or a compaction's output (`moved`).
    enum RecordSource {
        case scanned(ChunkedFileReader)
        case reverify(ChunkedFileReader, SegmentFile)
        case moved
    }

    /// The entry of a live value `record`, with its annotation; `nil` if it
    /// `moved` and its copy is not this very record (superseded after the
    /// swap).
    func readEntry(
        _ record: ScannedRecord, entry: IndexEntry, from source: RecordSource, files: [UInt32: SegmentFile]
    ) throws(OutboxLogError) -> LogEntry? {
        var item: LogEntry
        switch source {
        case .moved:
            guard let target = files[entry.value.segment] else { return nil }
            let copy = try target.readRecord(
                at: Int64(entry.value.offset), length: Int(entry.value.length), expecting: record.key)
            guard copy.sequence == record.sequence else { return nil }
            item = LogEntry(key: record.key, sequence: record.sequence, value: copy.payload, expiry: copy.expiry, annotation: nil)
        case .reverify(let reader, let file):
            let frame = try reader.window(at: record.offset, count: record.length)
            guard frame.count == record.length else {
                throw .corruption("record cut short", file: file.path, offset: record.offset, damage: .recordCutShort)
            }
            let copy = try file.verify(frame, at: record.offset, expecting: record.key)
            guard copy.sequence == record.sequence else {
                throw .corruption("record at this offset is not the one scanned there", file: file.path, offset: record.offset)
            }
            item = LogEntry(key: record.key, sequence: record.sequence, value: copy.payload, expiry: copy.expiry, annotation: nil)
        case .scanned(let reader):
            let frame = try reader.window(at: record.offset, count: record.length)
            let keyEnd = RecordFrame.size(keyCount: record.key.count, payloadCount: 0, expires: record.expiry != nil)
            item = LogEntry(
                key: record.key, sequence: record.sequence, value: Array(frame[keyEnd...]), expiry: record.expiry,
                annotation: nil)
        }
        if entry.annotation.exists, let annotationFile = files[entry.annotation.segment] {
            let annotation = try annotationFile.readRecord(
                at: Int64(entry.annotation.offset), length: Int(entry.annotation.length), expecting: record.key)
            item.annotation = .init(sequence: annotation.sequence, payload: annotation.payload, expiry: annotation.expiry)
        }
        return item
    }
}
