import Foundation
import OutboxLog

/// The key journal's files; Docs/IDEMPOTENCY.md ("The key journal") has the
/// whole format.
///
/// ```
/// journal.secret                32 random bytes: the key digests' HMAC key (0600)
/// keys-XXXXXXXX.journal         a segment: header, then frames, append-only
/// keys-XXXXXXXX.index           a sealed segment's entries (written once, at seal)
/// ```
///
/// Segment header (16 bytes): magic `OBKJ`, version u32, segment id u32,
/// reserved u32 (zero). Frame: length u32 (kind + payload), CRC-32 u32 (of kind and
/// payload), kind u8, payload (``JournalRecord``).
///
/// Index file: magic `OBKX`, version u32, segment id u32, count u32, then
/// `count` entries of 28 bytes (digest hash u64, digest check u32, frame
/// offset u32, frame length u32, expiry u32 in whole seconds since 1970
/// rounded up, kind u8, 3 zero bytes), then the CRC-32 u32 of all before it.
/// A claim settled later in the same segment is left out of its index file.
package enum JournalFormat {
    static let version: UInt32 = 1
    static let segmentMagic = Array("OBKJ".utf8)
    static let indexMagic = Array("OBKX".utf8)
    package static let segmentHeaderSize = 16
    package static let frameHeaderSize = 9
    static let indexEntrySize = 28
    static let secretName = "journal.secret"

    package static func segmentName(_ id: UInt32) -> String { "keys-\(hex(id)).journal" }
    package static func indexName(_ id: UInt32) -> String { "keys-\(hex(id)).index" }

    /// The segment id in a segment file's name, or `nil` for other names:
    /// only the name ``segmentName(_:)`` gives a segment the journal makes
    /// (from 1) is one. `UInt32(_:radix:)` alone also takes upper-case
    /// digits and a sign, so a stray `keys-0000000A.journal` would be read
    /// as a second segment 10, or `keys-00000000.journal` as a segment 0.
    /// The last segment id: a journal rolls about once a segment's worth
    /// of keys, so it never gets here, and a file named past it (a stray
    /// `keys-ffffffff.journal`) is not one of its segments, whose next roll
    /// would have no id to take.
    package static let maximumSegmentID: UInt32 = 0x7FFF_FFFF

    package static func segmentID(fromName name: String) -> UInt32? {
        guard name.utf8.count == 21, name.hasPrefix("keys-"), name.hasSuffix(".journal"),
            let id = UInt32(name.dropFirst(5).prefix(8), radix: 16), id != 0, id <= maximumSegmentID,
            segmentName(id).utf8.elementsEqual(name.utf8)
        else { return nil }
        return id
    }

    private static func hex(_ id: UInt32) -> String {
        let digits = String(id, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    package static func segmentHeader(id: UInt32) -> [UInt8] {
        var out = ByteWriter(bytes: segmentMagic)
        out.uint32(version)
        out.uint32(id)
        out.uint32(0)
        return out.bytes
    }

    /// Checks a segment header; returns why it is not one for `id`.
    package static func checkSegmentHeader(_ bytes: ArraySlice<UInt8>, id: UInt32) -> String? {
        guard bytes.count >= segmentHeaderSize else { return "the header is cut short" }
        var input = ByteReader(bytes)
        guard input.fixed(4) == segmentMagic else { return "not a key journal segment" }
        guard let version = input.uint32(), version == Self.version else { return "unsupported journal version" }
        guard input.uint32() == id else { return "the header names another segment" }
        guard input.uint32() == 0 else { return "the header's reserved field is not zero" }
        return nil
    }

    package static func frame(_ record: JournalRecord) -> [UInt8] {
        let payload = record.encoded()
        var crc = CRC32()
        crc.update(CollectionOfOne(record.kind.rawValue))
        crc.update(payload)
        var out = ByteWriter()
        out.bytes.reserveCapacity(frameHeaderSize + payload.count)
        out.uint32(UInt32(1 + payload.count))
        out.uint32(crc.value)
        out.bytes.append(record.kind.rawValue)
        out.bytes.append(contentsOf: payload)
        return out.bytes
    }

    /// What a frame at `offset` of `bytes` holds.
    package enum FrameRead {
        case record(JournalRecord, length: Int)
        /// The bytes end inside the frame (a torn write, at the tail).
        case cut
        /// The frame's checksum or contents are wrong.
        case damaged(String)
    }

    package static func readFrame(_ bytes: [UInt8], at offset: Int) -> FrameRead {
        guard offset + frameHeaderSize <= bytes.count else { return .cut }
        var header = ByteReader(bytes[offset..<offset + 8])
        guard let length = header.uint32().map(Int.init), let expected = header.uint32() else { return .cut }
        guard length >= 1 else { return .damaged("a frame of length 0") }
        guard offset + 8 + length <= bytes.count else { return .cut }
        let body = bytes[(offset + 8)..<(offset + 8 + length)]
        guard CRC32.checksum(body) == expected else { return .damaged("checksum mismatch") }
        guard let record = JournalRecord.decode(kind: body.first!, payload: body.dropFirst()) else {
            return .damaged("a record this version cannot decode")
        }
        return .record(record, length: 8 + length)
    }

    /// Whole seconds since 1970, rounded down: a slot whose expiry is at or
    /// before this has surely expired.
    static func nowSeconds(_ date: Date) -> UInt32 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        return seconds <= 0 ? 0 : seconds >= Double(UInt32.max) ? .max : UInt32(seconds)
    }

    /// Whole seconds since 1970, rounded up (a key never expires early),
    /// clamped to `UInt32`.
    static func expirySeconds(_ date: Date) -> UInt32 {
        let seconds = date.timeIntervalSince1970.rounded(.up)
        return seconds <= 0 ? 0 : seconds >= Double(UInt32.max) ? .max : UInt32(seconds)
    }
}

/// Where one record lives, and what the index needs to know about it.
package struct JournalEntry: Sendable, Hashable {
    var digest: KeyDigest
    package var offset: UInt32
    package var length: UInt32
    /// ``JournalFormat/expirySeconds(_:)`` of the record's expiry.
    var expires: UInt32
    var kind: JournalRecord.Kind

    func encode(into out: inout ByteWriter) {
        out.uint64(digest.hash)
        out.uint32(digest.check)
        out.uint32(offset)
        out.uint32(length)
        out.uint32(expires)
        out.bytes.append(contentsOf: [kind.rawValue, 0, 0, 0])
    }

    /// The index file's bytes for a segment's entries.
    package static func indexFile(segment: UInt32, entries: [JournalEntry]) -> [UInt8] {
        var out = ByteWriter(bytes: JournalFormat.indexMagic)
        out.bytes.reserveCapacity(20 + entries.count * JournalFormat.indexEntrySize)
        out.uint32(JournalFormat.version)
        out.uint32(segment)
        out.uint32(UInt32(entries.count))
        for entry in entries { entry.encode(into: &out) }
        out.uint32(CRC32.checksum(out.bytes))
        return out.bytes
    }

    /// Decodes an index file; `nil` if it is damaged, for another segment,
    /// or not one the journal writes (an entry inside the segment's header,
    /// shorter than a frame, before or over the one before it, or with its
    /// padding set): the segment is then scanned instead.
    package static func decodeIndexFile(_ bytes: [UInt8], segment: UInt32) -> [JournalEntry]? {
        guard bytes.count >= 20 else { return nil }
        var tail = ByteReader(bytes[(bytes.count - 4)...])
        guard tail.uint32() == CRC32.checksum(bytes[..<(bytes.count - 4)]) else { return nil }
        var input = ByteReader(bytes[..<(bytes.count - 4)])
        guard input.fixed(4) == JournalFormat.indexMagic, input.uint32() == JournalFormat.version, input.uint32() == segment,
            let count = input.uint32().map(Int.init), bytes.count == 20 + count * JournalFormat.indexEntrySize
        else { return nil }
        // Decoded in place: this runs for every stored key at every open.
        return bytes.withUnsafeBytes { raw -> [JournalEntry]? in
            var entries: [JournalEntry] = []
            entries.reserveCapacity(count)
            // Where the frame before ends: entries are frames, in order.
            var end = UInt64(JournalFormat.segmentHeaderSize)
            for index in 0..<count {
                let base = 16 + index * JournalFormat.indexEntrySize
                func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + at, as: UInt32.self)) }
                guard let kind = JournalRecord.Kind(rawValue: raw[base + 24]), raw[base + 25] == 0, raw[base + 26] == 0, raw[base + 27] == 0
                else { return nil }
                let (offset, length) = (u32(12), u32(16))
                guard UInt64(offset) >= end, length >= UInt32(JournalFormat.frameHeaderSize), UInt64(offset) + UInt64(length) <= UInt64(UInt32.max)
                else { return nil }
                end = UInt64(offset) + UInt64(length)
                let hash = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt64.self))
                entries.append(JournalEntry(
                    digest: KeyDigest(hash: hash, check: u32(8)), offset: offset, length: length, expires: u32(20), kind: kind))
            }
            return entries
        }
    }
}
