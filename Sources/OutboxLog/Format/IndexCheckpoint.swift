import OutboxCollections

/// The index checkpoint (`INDEX`): the engine's index and segment usage as
/// they stood once every record up to a sequence number was indexed, so an
/// open reads this file and the records after that number instead of every
/// record (Docs/FORMAT.md, "Index checkpoint").
///
/// ```
/// offset size field
///      0    8 magic "OBXINDX\n"
///      8    2 version (2)
///     10    2 header size (64)
///     12    4 flags (0)
///     16    8 covered sequence P: every record up to P is reflected
///     24    4 segment count s
///     28    4 reserved (0)
///     32    8 key count k
///     40    8 size of the key section in bytes
///     48    4 CRC-32 of the segment table
///     52    4 CRC-32 of the key section
///     56    4 reserved (0)
///     60    4 CRC-32 of bytes 0..<60
///     64 88·s segment table, oldest first: base, salt, cover end (0: appended),
///             covered end (bytes of the file the checkpoint covers), then the
///             usage as of P: frame bytes, live bytes, records, live records,
///             marker bytes, latest expiry (ms; i64.min: none), records without
///             an expiry (u64 / i64 each)
///      …    … key section: k × (u16 key length, key, value location,
///             annotation location), a location being u32 segment (index in the
///             table; 0xFFFFFFFF: none), u32 offset, u32 length
/// ```
///
/// The header and the segment table are read at open to decide whether the
/// checkpoint describes this log (``LogPosition/matches(_:)``); the key
/// section (most of the file) is read and verified afterwards, by the index
/// load. Anything that does not verify, or that names a location outside
/// the covered bytes, makes the open read the whole log instead: the file is
/// an accelerator, never the truth.
struct IndexCheckpoint: Sendable {
    static let magic: [UInt8] = Array("OBXINDX\n".utf8)
    static let version: UInt16 = 2
    static let headerSize = 64
    static let segmentEntrySize = 88
    static let noSegment = UInt32.max

    struct Segment: Sendable, Hashable {
        var base: UInt64
        var salt: UInt64
        var coverEnd: UInt64?
        /// The file's bytes the checkpoint covers (header included).
        var coveredEnd: Int64
        var usage: SegmentUsage
    }

    /// The last sequence number covered.
    var sequence: UInt64
    var segments: [Segment]
    var keyCount: Int
    var keySectionSize: Int
    var keySectionCRC: UInt32

    var position: LogPosition {
        LogPosition(sequence: sequence, segments: segments.map { LogPosition.Segment(base: $0.base, salt: $0.salt) })
    }

    /// Where the key section starts in the file.
    var keySectionOffset: Int { Self.headerSize + Self.segmentEntrySize * segments.count }

    // MARK: Writing

    /// The whole file for `elements` (the index's keys and locations,
    /// `count` of them) with `segments` (by segment id, in log order).
    static func encode(
        sequence: UInt64, segments: [(id: UInt32, segment: Segment)],
        elements: PackedTable<LogKey, IndexEntry>.DenseElements, count: Int
    ) -> [UInt8] {
        var positions: [UInt32: UInt32] = [:]
        for (position, item) in segments.enumerated() { positions[item.id] = UInt32(position) }
        var table: [UInt8] = []
        table.reserveCapacity(segmentEntrySize * segments.count)
        for (_, segment) in segments {
            table.appendLittleEndian(segment.base)
            table.appendLittleEndian(segment.salt)
            table.appendLittleEndian(segment.coverEnd ?? 0)
            table.appendLittleEndian(UInt64(segment.coveredEnd))
            table.appendLittleEndian(segment.usage.totalBytes)
            table.appendLittleEndian(segment.usage.liveBytes)
            table.appendLittleEndian(UInt64(segment.usage.records))
            table.appendLittleEndian(UInt64(segment.usage.liveRecords))
            table.appendLittleEndian(segment.usage.markerBytes)
            table.appendLittleEndian(segment.usage.latestExpiry)
            table.appendLittleEndian(UInt64(segment.usage.unexpiring))
        }
        var keys: [UInt8] = []
        keys.reserveCapacity(count * 48)
        func append(_ location: Location) {
            guard location.exists, let position = positions[location.segment] else {
                keys.appendLittleEndian(noSegment)
                keys.appendLittleEndian(UInt32(0))
                keys.appendLittleEndian(UInt32(0))
                return
            }
            keys.appendLittleEndian(position)
            keys.appendLittleEndian(location.offset)
            keys.appendLittleEndian(location.length)
        }
        var written = 0
        elements.forEach { element in
            element.key.withUnsafeBytes { raw in
                keys.appendLittleEndian(UInt16(raw.count))
                keys.append(contentsOf: raw)
            }
            append(element.value.value)
            append(element.value.annotation)
            written += 1
        }
        var header: [UInt8] = magic
        header.reserveCapacity(headerSize + table.count + keys.count)
        header.appendLittleEndian(version)
        header.appendLittleEndian(UInt16(headerSize))
        header.appendLittleEndian(UInt32(0))
        header.appendLittleEndian(sequence)
        header.appendLittleEndian(UInt32(segments.count))
        header.appendLittleEndian(UInt32(0))
        header.appendLittleEndian(UInt64(written))
        header.appendLittleEndian(UInt64(keys.count))
        header.appendLittleEndian(CRC32.checksum(table))
        header.appendLittleEndian(CRC32.checksum(keys))
        header.appendLittleEndian(UInt32(0))
        header.appendLittleEndian(CRC32.checksum(header))
        header.append(contentsOf: table)
        header.append(contentsOf: keys)
        return header
    }

    // MARK: Reading

    typealias Rejection = IndexCheckpointRejection

    /// Decodes the header (the first ``headerSize`` bytes); the caller
    /// then reads the segment table, whose size ``tableSize(fromHeader:)``
    /// gives.
    static func tableSize(fromHeader bytes: [UInt8]) -> Result<Int, Rejection> {
        bytes.withUnsafeBytes { raw in
            guard raw.count >= headerSize, raw.prefix(8).elementsEqual(magic) else {
                return .failure(.notACheckpoint)
            }
            let stored: UInt32 = raw.loadLittleEndian(at: 60)
            guard stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[..<60])) else {
                return .failure(.headerFailsCRC)
            }
            let version: UInt16 = raw.loadLittleEndian(at: 8)
            guard version == Self.version else {
                return .failure(.unsupportedVersion(version))
            }
            guard raw.loadLittleEndian(at: 10, as: UInt16.self) == UInt16(headerSize),
                raw.loadLittleEndian(at: 12, as: UInt32.self) == 0, raw.loadLittleEndian(at: 28, as: UInt32.self) == 0,
                raw.loadLittleEndian(at: 56, as: UInt32.self) == 0
            else { return .failure(.headerInconsistent) }
            // At most the segments a log can hold (every one at least a
            // header and a record): on 32-bit platforms too.
            let count = raw.loadLittleEndian(at: 24, as: UInt32.self)
            guard let entries = Int(exactly: count), entries <= Int.max / segmentEntrySize else {
                return .failure(.headerInconsistent)
            }
            return .success(entries * segmentEntrySize)
        }
    }

    /// Decodes the header and the segment table (`bytes`: the file's first
    /// ``headerSize`` + table bytes).
    static func decodeHead(_ bytes: [UInt8]) -> Result<IndexCheckpoint, Rejection> {
        let tableSize: Int
        switch Self.tableSize(fromHeader: Array(bytes.prefix(headerSize))) {
        case .success(let size): tableSize = size
        case .failure(let rejection): return .failure(rejection)
        }
        return bytes.withUnsafeBytes { raw in
            guard raw.count == headerSize + tableSize else {
                return .failure(.segmentTableCut)
            }
            let table = UnsafeRawBufferPointer(rebasing: raw[headerSize...])
            guard CRC32.checksum(table) == raw.loadLittleEndian(at: 48, as: UInt32.self) else {
                return .failure(.segmentTableFailsCRC)
            }
            var segments: [Segment] = []
            for index in 0..<(tableSize / segmentEntrySize) {
                let at = index * segmentEntrySize
                let coverEnd: UInt64 = table.loadLittleEndian(at: at + 16)
                let covered = Int64(bitPattern: table.loadLittleEndian(at: at + 24))
                var usage = SegmentUsage()
                usage.totalBytes = table.loadLittleEndian(at: at + 32)
                usage.liveBytes = table.loadLittleEndian(at: at + 40)
                usage.records = Int(truncatingIfNeeded: table.loadLittleEndian(at: at + 48, as: UInt64.self))
                usage.liveRecords = Int(truncatingIfNeeded: table.loadLittleEndian(at: at + 56, as: UInt64.self))
                usage.markerBytes = table.loadLittleEndian(at: at + 64)
                usage.latestExpiry = table.loadLittleEndian(at: at + 72)
                usage.unexpiring = Int(truncatingIfNeeded: table.loadLittleEndian(at: at + 80, as: UInt64.self))
                guard usage.totalBytes >= 0, usage.totalBytes <= Int64.max - Int64(SegmentHeader.size),
                    covered == Int64(SegmentHeader.size) + usage.totalBytes, usage.liveBytes >= 0,
                    usage.liveBytes <= usage.totalBytes, usage.liveRecords >= 0, usage.liveRecords <= usage.records,
                    usage.markerBytes >= 0, usage.unexpiring >= 0, usage.unexpiring <= usage.records
                else { return .failure(.segmentTableInconsistent) }
                segments.append(
                    Segment(
                        base: table.loadLittleEndian(at: at), salt: table.loadLittleEndian(at: at + 8),
                        coverEnd: coverEnd == 0 ? nil : coverEnd, coveredEnd: covered, usage: usage))
            }
            let keyCount = Int(truncatingIfNeeded: raw.loadLittleEndian(at: 32, as: UInt64.self))
            let keyBytes = Int(truncatingIfNeeded: raw.loadLittleEndian(at: 40, as: UInt64.self))
            guard keyCount >= 0, keyBytes >= 0, keyCount <= keyBytes / 27, keyBytes <= Int(Int32.max) * 64 else {
                return .failure(.keySectionSizeImplausible)
            }
            return .success(
                IndexCheckpoint(
                    sequence: raw.loadLittleEndian(at: 16), segments: segments, keyCount: keyCount,
                    keySectionSize: keyBytes, keySectionCRC: raw.loadLittleEndian(at: 52)))
        }
    }

    /// Decodes the key section into an index whose segment ids are
    /// `firstID + table position`, with the table's usage. Every location
    /// must lie within the covered bytes of its segment.
    func decodeIndex(_ section: [UInt8], firstID: UInt32) -> Result<LogIndex, Rejection> {
        guard section.count == keySectionSize, CRC32.checksum(section) == keySectionCRC else {
            return .failure(.keySectionFailsCRC)
        }
        var index = LogIndex()
        for (position, segment) in segments.enumerated() { index.usage[firstID + UInt32(position)] = segment.usage }
        let covered = segments.map(\.coveredEnd)
        let decoded: Bool = section.withUnsafeBytes { raw in
            var at = 0
            func location(_ raw: UnsafeRawBufferPointer, _ at: Int, optional: Bool) -> Location?? {
                let position = raw.loadLittleEndian(at: at, as: UInt32.self)
                let offset = raw.loadLittleEndian(at: at + 4, as: UInt32.self)
                let length = raw.loadLittleEndian(at: at + 8, as: UInt32.self)
                if position == Self.noSegment { return optional && offset == 0 && length == 0 ? .some(nil) : nil }
                guard Int(position) < covered.count, length >= UInt32(RecordFrame.headerSize),
                    Int64(offset) >= Int64(SegmentHeader.size), Int64(offset) + Int64(length) <= covered[Int(position)]
                else { return nil }
                return .some(Location(segment: firstID + position, offset: offset, length: length))
            }
            struct Malformed: Error {}
            // Loaded at once: see `PackedTable.init(loadingUnique:_:)`.
            let entries = try? PackedTable<LogKey, IndexEntry>(loadingUnique: keyCount) { _ throws(Malformed) in
                guard at + 2 <= raw.count else { throw Malformed() }
                let length = Int(raw.loadLittleEndian(at: at, as: UInt16.self))
                guard length >= 1, length <= LogKey.maximumLength, at + 2 + length + 24 <= raw.count else { throw Malformed() }
                let key = LogKey(UnsafeRawBufferPointer(rebasing: raw[(at + 2)..<(at + 2 + length)]))
                at += 2 + length
                guard let value = location(raw, at, optional: false), let value,
                    let annotation = location(raw, at + 12, optional: true)
                else { throw Malformed() }
                at += 24
                return .init(key: key, value: IndexEntry(value: value, annotation: annotation ?? .none))
            }
            // A key twice (`nil`) or a malformed record (`try?`'s `nil`).
            guard let entries = entries ?? nil, at == raw.count else { return false }
            index.entries = entries
            return true
        }
        guard decoded else { return .failure(.keySectionInconsistent) }
        return .success(index)
    }
}
