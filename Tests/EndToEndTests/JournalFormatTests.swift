import Foundation
@testable import IdempotencyKeyMiddleware
import OutboxLog
import Testing

/// The key journal's decoders accept exactly what the journal writes: a
/// file name, header, index file or record that decodes is the one written
/// for what it decodes to (the `key-journal` fuzz target holds them to the
/// same rules; Fuzz/regressions/key-journal holds what it found).
@Suite("Key journal format")
struct JournalFormatTests {
    @Test("a segment file is recognised only by the name the journal gives it", arguments: [
        "keys-0000000A.journal", "keys-+0000001.journal", "keys--0000000.journal", "keys-00000000.journal",
        "keys-80000000.journal", "keys-ffffffff.journal",
    ])
    func segmentNames(_ name: String) {
        #expect(JournalFormat.segmentID(fromName: name) == nil)
    }

    @Test("every segment name the journal gives is recognised", arguments: [1, 0xA, 0x70B1_C2D3, JournalFormat.maximumSegmentID] as [UInt32])
    func givenNames(_ id: UInt32) {
        #expect(JournalFormat.segmentID(fromName: JournalFormat.segmentName(id)) == id)
    }

    /// A claim's payload with these times, as the journal lays it out.
    func claimPayload(expires: Int64, since: Int64) -> [UInt8] {
        var out = ByteWriter()
        out.int64(expires)
        out.string16("order-1")
        out.int64(since)
        out.bytes16(Array(repeating: 7, count: 32))
        return out.bytes
    }

    @Test("a record's times are read as the milliseconds written, so it encodes back to its bytes", arguments: [
        255_145_150_226, 1_767_225_600_001, 1, -1, 0, 64_092_211_200_000, 999_999_999_999_999, -999_999_999_999_999,
    ] as [Int64])
    func exactTimes(_ milliseconds: Int64) throws {
        let payload = claimPayload(expires: milliseconds, since: milliseconds)
        let record = try #require(JournalRecord.decode(kind: JournalRecord.Kind.claim.rawValue, payload: payload[...]))
        #expect(record.encoded() == payload)
    }

    @Test("a date that is no time (NaN) is written as the earliest time, never a trap")
    func nanDate() {
        #expect(JournalRecord.milliseconds(Date(timeIntervalSince1970: .nan)) == Int64.min)
    }

    @Test("a time the journal writes, however far, reads back as itself", arguments: [
        Date(timeIntervalSince1970: 1e16), Date(timeIntervalSince1970: -1e16), Date(timeIntervalSince1970: 9.1e15), .distantFuture,
        .distantPast, Date(timeIntervalSince1970: 1_767_225_600.0005),
    ])
    func writtenTimes(_ date: Date) throws {
        let written = JournalRecord.milliseconds(date)
        let payload = claimPayload(expires: written, since: written)
        let record = try #require(JournalRecord.decode(kind: JournalRecord.Kind.claim.rawValue, payload: payload[...]))
        #expect(record.encoded() == payload, "\(written) ms")
    }

    /// A completion's payload with these headers, in this order.
    func completionPayload(headers: [(String, String)]) -> [UInt8] {
        var out = ByteWriter()
        out.int64(1_767_225_600_000)
        out.string16("order-1")
        out.bytes16(Array(repeating: 7, count: 32))
        out.uint16(201)
        out.uint16(UInt16(headers.count))
        for (name, value) in headers {
            out.string16(name)
            out.string16(value)
        }
        out.uint32(2)
        out.bytes += Array("{}".utf8)
        return out.bytes
    }

    @Test("a completion's headers are read only in the order the journal writes them, each once")
    func headerOrder() {
        let kind = JournalRecord.Kind.complete.rawValue
        let written = completionPayload(headers: [("content-type", "application/json"), ("location", "/orders/1")])
        #expect(JournalRecord.decode(kind: kind, payload: written[...])?.encoded() == written)
        let reversed = completionPayload(headers: [("location", "/orders/1"), ("content-type", "application/json")])
        #expect(JournalRecord.decode(kind: kind, payload: reversed[...]) == nil)
        let repeated = completionPayload(headers: [("location", "/orders/1"), ("location", "/orders/2")])
        #expect(JournalRecord.decode(kind: kind, payload: repeated[...]) == nil)
    }

    @Test("a segment header is accepted only as written: its reserved field zero")
    func segmentHeader() {
        var header = JournalFormat.segmentHeader(id: 3)
        #expect(JournalFormat.checkSegmentHeader(header[...], id: 3) == nil)
        header[12] = 1
        #expect(JournalFormat.checkSegmentHeader(header[...], id: 3) != nil)
    }

    func entry(offset: UInt32, length: UInt32) -> JournalEntry {
        JournalEntry(digest: KeyDigest(hash: UInt64(offset), check: 9), offset: offset, length: length, expires: 1_767_225_600, kind: .complete)
    }

    /// `entries`' index file, with `change` made to it and its CRC made to match.
    func indexFile(_ entries: [JournalEntry], _ change: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        var bytes = JournalEntry.indexFile(segment: 2, entries: entries)
        change(&bytes)
        let crc = CRC32.checksum(bytes[..<(bytes.count - 4)])
        bytes.replaceSubrange((bytes.count - 4)..., with: withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        return bytes
    }

    @Test("an index file is used only if it could have been written: entries after the header, in order, padding zero")
    func indexFiles() {
        let written = [entry(offset: 16, length: 40), entry(offset: 56, length: 100)]
        #expect(JournalEntry.decodeIndexFile(indexFile(written), segment: 2) == written)
        // The 3 bytes after an entry's kind.
        #expect(JournalEntry.decodeIndexFile(indexFile(written) { $0[16 + 25] = 1 }, segment: 2) == nil)
        for entries in [
            [entry(offset: 0, length: 40)],  // inside the segment's header
            [entry(offset: 16, length: 4)],  // shorter than a frame's header
            [entry(offset: 56, length: 100), entry(offset: 16, length: 40)],  // out of order
            [entry(offset: 16, length: 40), entry(offset: 40, length: 100)],  // overlapping
            [entry(offset: UInt32.max - 8, length: 40)],  // ending past any offset
        ] {
            #expect(JournalEntry.decodeIndexFile(indexFile(entries), segment: 2) == nil, "\(entries)")
        }
    }
}
