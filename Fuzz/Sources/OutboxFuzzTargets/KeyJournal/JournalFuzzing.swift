import IdempotencyKeyMiddleware
import Foundation
import OutboxLog

/// Fuzz entry point for the key journal's files (``JournalFormat``): its
/// frames, read at any offset as a scan reads them; a segment's header; a
/// sealed segment's index file; one record's payload (``JournalRecord``);
/// and the names of segment files. See `FuzzViolation` (Log/FuzzViolation.swift) and
/// Fuzz/README.md.
///
/// What decodes must be what the bytes say: a frame, header, index file or
/// payload that decodes encodes back to exactly its bytes (times included:
/// any millisecond within ±10¹⁵ of 1970 comes back as itself; beyond, what
/// it is encoded as reads back as itself); a frame is cut (a torn tail) exactly when its
/// length runs past the bytes; a segment name decodes exactly when it is
/// the name the journal gives that segment.
///
/// Control byte, bits 0–2: 0, and 5–7, the frames from an offset (bits
/// 4–7) to the end, each where the one before ends; 1 a segment header; 2
/// an index file; 3 a record (its kind byte, then its payload); 4 a segment
/// file's name (the data as UTF-8, any string). Bit 3 repairs the CRC of
/// each frame, or of the index file, before it is read.
package enum JournalFuzzing {
    package static func journal(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let bytes = Array(input.data)
        switch input.control & 7 {
        case 1: try segmentHeader(bytes)
        case 2: try indexFile(bytes, repair: input.flag(3))
        case 3:
            guard let kind = bytes.first else { return }
            try record(kind: kind, payload: Array(bytes.dropFirst()))
        case 4: try segmentName(String(decoding: bytes, as: UTF8.self))
        default: try frames(bytes, from: Int(input.control >> 4), repair: input.flag(3))
        }
    }

    // MARK: Frames

    static func frames(_ input: [UInt8], from start: Int, repair: Bool) throws(FuzzViolation) {
        var bytes = input
        var offset = start
        while offset <= bytes.count {
            if repair { repairFrame(&bytes, at: offset) }
            let available = bytes.count - offset
            let declared = available >= 8 ? Int(u32(bytes, at: offset)) : 0
            let runsPast = available < JournalFormat.frameHeaderSize || (declared >= 1 && 8 + declared > available)
            switch JournalFormat.readFrame(bytes, at: offset) {
            case .record(let record, let length):
                guard !runsPast, length == 8 + declared else {
                    throw FuzzViolation("frame at \(offset): \(length) bytes read, \(declared) + 8 declared, \(available) there")
                }
                try checkEncoding(record, kind: bytes[offset + 8], payload: Array(bytes[(offset + 9)..<(offset + length)]))
                guard JournalFormat.frame(record) == Array(bytes[offset..<(offset + length)]) || !exactTimes(record) else {
                    throw FuzzViolation("frame at \(offset): read as \(record), which is framed as other bytes")
                }
                offset += length
            case .cut:
                guard runsPast else { throw FuzzViolation("frame at \(offset): called cut, but its \(declared) bytes are there") }
                return
            case .damaged:
                guard !runsPast else { throw FuzzViolation("frame at \(offset): runs past the bytes, yet called damaged, not cut") }
                return
            }
        }
    }

    /// Rewrites the CRC of the frame at `offset`, if its length fits.
    static func repairFrame(_ bytes: inout [UInt8], at offset: Int) {
        guard bytes.count - offset >= JournalFormat.frameHeaderSize else { return }
        let length = Int(u32(bytes, at: offset))
        guard length >= 1, length <= bytes.count - offset - 8 else { return }
        let crc = CRC32.checksum(bytes[(offset + 8)..<(offset + 8 + length)])
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: offset + 4, as: UInt32.self) }
    }

    static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
    }

    // MARK: Records

    static func record(kind: UInt8, payload: [UInt8]) throws(FuzzViolation) {
        guard let record = JournalRecord.decode(kind: kind, payload: payload[...]) else { return }
        try checkEncoding(record, kind: kind, payload: payload)
    }

    /// A record that decodes has the kind it was read as, encodes to
    /// exactly its bytes when its times are ones a `Date` holds to the
    /// millisecond, and otherwise to bytes that read back and encode to
    /// themselves (a time beyond reads as the nearest `Date`).
    static func checkEncoding(_ record: JournalRecord, kind: UInt8, payload: [UInt8]) throws(FuzzViolation) {
        guard record.kind.rawValue == kind else { throw FuzzViolation("a record of kind \(kind) decodes as \(record.kind)") }
        let encoded = record.encoded()
        guard let again = JournalRecord.decode(kind: kind, payload: encoded[...]), again.encoded() == encoded else {
            throw FuzzViolation("a record read as \(record) is encoded as bytes that do not read back as themselves")
        }
        guard encoded == payload || !exactTimes(record) else {
            throw FuzzViolation("a record read as \(record) encodes to other bytes")
        }
    }

    /// Whether every time of `record` is within ±10¹⁵ ms of 1970 (some
    /// 31,000 years), where each millisecond has a `Date` of its own.
    static func exactTimes(_ record: JournalRecord) -> Bool {
        let times: [Date]
        switch record {
        case .claim(_, _, let since, let expiresAt), .unknown(_, _, let since, let expiresAt): times = [since, expiresAt]
        case .complete(_, _, _, let expiresAt), .release(_, let expiresAt): times = [expiresAt]
        }
        return times.allSatisfy { abs($0.timeIntervalSince1970 * 1000) <= 1e15 }
    }

    // MARK: Segment headers, index files, names

    static func segmentHeader(_ bytes: [UInt8]) throws(FuzzViolation) {
        // The id the file's name gives: the one in the header, or another.
        let id = bytes.count >= 12 ? u32(bytes, at: 8) : 1
        for candidate in [id, id &+ 1] where JournalFormat.checkSegmentHeader(bytes[...], id: candidate) == nil {
            guard Array(bytes.prefix(JournalFormat.segmentHeaderSize)) == JournalFormat.segmentHeader(id: candidate) else {
                throw FuzzViolation("a header accepted for segment \(candidate) is not the header written for it")
            }
        }
    }

    static func indexFile(_ input: [UInt8], repair: Bool) throws(FuzzViolation) {
        var bytes = input
        if repair, bytes.count >= 4 {
            let crc = CRC32.checksum(bytes[..<(bytes.count - 4)])
            bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: $0.count - 4, as: UInt32.self) }
        }
        let segment = bytes.count >= 12 ? u32(bytes, at: 8) : 1
        guard let entries = JournalEntry.decodeIndexFile(bytes, segment: segment) else { return }
        guard JournalEntry.indexFile(segment: segment, entries: entries) == bytes else {
            throw FuzzViolation("an index file read as \(entries.count) entries is not the file written for them")
        }
        // Each entry is a frame of the segment, after its header and after the one before.
        var end = UInt64(JournalFormat.segmentHeaderSize)
        for entry in entries {
            guard UInt64(entry.offset) >= end, entry.length >= UInt32(JournalFormat.frameHeaderSize) else {
                throw FuzzViolation("an index entry at \(entry.offset), \(entry.length) bytes, where the segment has no frame")
            }
            end = UInt64(entry.offset) + UInt64(entry.length)
        }
        guard end <= UInt64(UInt32.max) else { throw FuzzViolation("an index entry ends past any offset a segment has") }
    }

    static func segmentName(_ name: String) throws(FuzzViolation) {
        if let id = JournalFormat.segmentID(fromName: name) {
            guard JournalFormat.segmentName(id) == name, id != 0 else {
                throw FuzzViolation("the file \(name.debugDescription) is taken for segment \(id)")
            }
        }
        let utf8 = Array(name.utf8)
        // Every name the journal gives is recognised: keys-, 8 lowercase hex
        // digits of an id from 1 to the last one it rolls to, .journal.
        if utf8.count == 21, name.hasPrefix("keys-"), name.hasSuffix(".journal"),
            utf8[5..<13].allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            let id = UInt32(String(decoding: utf8[5..<13], as: UTF8.self), radix: 16), id != 0,
            id <= JournalFormat.maximumSegmentID, JournalFormat.segmentID(fromName: name) != id
        {
            throw FuzzViolation("the journal's own name \(name.debugDescription) is not recognised")
        }
    }
}
