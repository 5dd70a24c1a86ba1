import Foundation
import OutboxLog
import SystemPackage
import Testing

/// Every limit Docs/FORMAT.md states is enforced when a log is read: a frame
/// or header whose CRC verifies but that breaks a rule is damage, reported
/// with its file and offset like a CRC mismatch. The segments here are
/// written byte by byte from the spec (``RawSegment``), not by the engine.
@Suite("Format limits enforced on read")
struct FormatLimitTests {
    static let segmentName = "00000000000000000001.seg"

    /// Opens `directory` as `outbox log verify` does: read-only, salvage.
    static func verify(_ directory: FilePath) async throws -> RecoveryReport {
        var configuration = testConfiguration(.salvage)
        configuration.readOnly = true
        configuration.createIfMissing = false
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        let report = log.recoveryReport
        try await log.close()
        return report
    }

    /// ``verify(_:)`` of a log whose one segment is `bytes`, torn at
    /// `torn` if given: a bit flipped inside the frame that starts there.
    static func verify(segment bytes: [UInt8], tornAt torn: Int64? = nil) async throws -> RecoveryReport {
        var bytes = bytes
        if let torn { bytes[Int(torn) + 29] ^= 0x01 }
        let directory = TemporaryDirectory()
        LogFiles(directory: directory.path).write(bytes, to: directory.appending(segmentName))
        let report = try await verify(directory.path)
        withExtendedLifetime(directory) {}
        return report
    }

    /// A strict open must fail with `.corruption` naming `file` and `offset`.
    static func expectStrictOpenFails(_ directory: FilePath, file: String, offset: Int64) async {
        var configuration = testConfiguration()
        configuration.readOnly = true
        configuration.createIfMissing = false
        let error = await #expect(throws: OutboxLogError.self) {
            try await OutboxLog.open(at: directory, configuration: configuration)
        }
        #expect(error?.code == .corruption, "\(String(describing: error))")
        #expect(error?.file?.lastComponent?.string == file, "\(String(describing: error))")
        #expect(error?.offset == offset, "\(String(describing: error))")
    }

    /// A segment with records 1 (good), 2 (`bad`), 3 (good) and a marker
    /// vouching for all three: whatever is wrong with record 2 is damage,
    /// never a torn tail. Returns the directory and record 2's offset.
    static func logWithBadSecondRecord(_ bad: RawSegment.Frame) -> (TemporaryDirectory, Int64) {
        var segment = RawSegment(base: 1)
        segment.append(.value(key: "a", payload: [1], sequence: 1))
        let badOffset = Int64(segment.bytes.count)
        var frame = bad
        frame.sequence = 2
        segment.append(frame)
        segment.append(.value(key: "c", payload: [3], sequence: 3))
        segment.append(.marker(sequence: 4, watermark: 3))
        let directory = TemporaryDirectory()
        LogFiles(directory: directory.path).write(segment.bytes, to: directory.appending(segmentName))
        return (directory, badOffset)
    }

    static let badFrames: [(String, RawSegment.Frame)] = [
        ("a key of 1,025 bytes", .value(key: String(repeating: "k", count: 1025), payload: [2], sequence: 2)),
        ("a value with an empty key", .value(key: "", payload: [2], sequence: 2)),
        ("an annotation with an empty key", RawSegment.Frame(kind: 2, key: [], payload: [2], sequence: 2)),
        ("a tombstone with an empty key", RawSegment.Frame(kind: 3, key: [], payload: [], sequence: 2)),
        ("a tombstone with an expiry", RawSegment.Frame(kind: 3, key: Array("b".utf8), payload: [], sequence: 2, flags: 4, expiry: 5)),
        ("a marker with an expiry", RawSegment.Frame(kind: 4, key: [], payload: [], sequence: 2, flags: 4, expiry: 5)),
        ("an expiry flag whose key would run past the frame", .value(key: "bb", payload: [], sequence: 2, flags: 4)),
        ("flag bit 3", .value(key: "b", payload: [2], sequence: 2, flags: 8)),
    ]

    @Test("a frame that verifies but breaks a limit is damage at its own offset", arguments: 0..<badFrames.count)
    func frameLimit(_ which: Int) async throws {
        let (name, bad) = Self.badFrames[which]
        let (directory, offset) = Self.logWithBadSecondRecord(bad)
        await Self.expectStrictOpenFails(directory.path, file: Self.segmentName, offset: offset)
        let report = try await Self.verify(directory.path)
        #expect(!report.isClean, "\(name)")
        #expect(report.skipped.first?.file == Self.segmentName, "\(name)")
        #expect(report.skipped.first?.offset == offset, "\(name): \(report)")
        #expect(report.records == 2, "\(name): \(report)")
        #expect(report.liveKeys == 2, "\(name): \(report)")
    }

    @Test("a key of exactly 1,024 bytes is valid")
    func longestKey() async throws {
        let (directory, _) = Self.logWithBadSecondRecord(
            .value(key: String(repeating: "k", count: 1024), payload: [2], sequence: 2))
        let report = try await Self.verify(directory.path)
        #expect(report.isClean, "\(report)")
        #expect(report.liveKeys == 3)
    }

    @Test("the writer refuses an empty key, and the log stays usable")
    func writerRefusesEmptyKey() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        let error = await #expect(throws: OutboxLogError.self) { try await log.put(LogKey([]), [1], durability: .durable) }
        #expect(error?.code == .invalidArgument)
        try await log.put("k", [1], durability: .durable)
        try await log.close()
    }

    // MARK: Headers

    /// A one-segment log whose header is changed by `edit` (and its CRC
    /// recomputed over bytes 0..<(header size - 4) if `reseal`).
    static func logWithHeader(reseal: Bool = true, _ edit: (inout [UInt8]) -> Void) -> TemporaryDirectory {
        var segment = RawSegment(base: 1)
        segment.append(.value(key: "a", payload: [1], sequence: 1))
        segment.append(.marker(sequence: 2, watermark: 1))
        var bytes = segment.bytes
        edit(&bytes)
        if reseal {
            let headerSize = Int(bytes[10]) | Int(bytes[11]) << 8
            bytes.replaceSubrange((headerSize - 4)..<headerSize, with: RawSegment.le(RawSegment.crc32(bytes[..<(headerSize - 4)])))
        }
        let directory = TemporaryDirectory()
        LogFiles(directory: directory.path).write(bytes, to: directory.appending(segmentName))
        return directory
    }

    static let badHeaders: [(String, @Sendable (inout [UInt8]) -> Void)] = [
        ("a zero salt", { $0.replaceSubrange(32..<40, with: [UInt8](repeating: 0, count: 8)) }),
        ("a non-zero reserved field", { $0[40] = 1 }),
        ("an unknown header flag", { $0[12] = 2 }),
        ("a cover end on an appended segment", { $0[24] = 9 }),
        ("a rewritten segment whose cover end is before its base", { bytes in
            bytes[12] = 1  // rewritten, base 1, cover end 0
            bytes.replaceSubrange(24..<32, with: RawSegment.le(UInt64(0)))
        }),
    ]

    @Test("a header that verifies but breaks a rule is damage at offset 0", arguments: 0..<badHeaders.count)
    func headerRule(_ which: Int) async throws {
        let (name, edit) = Self.badHeaders[which]
        let directory = Self.logWithHeader(edit)
        await Self.expectStrictOpenFails(directory.path, file: Self.segmentName, offset: 0)
        let report = try await Self.verify(directory.path)
        #expect(!report.isClean, "\(name)")
        #expect(report.skipped.first?.file == Self.segmentName, "\(name): \(report)")
        #expect(report.skipped.first?.offset == 0, "\(name): \(report)")
    }

    @Test(
        "another version, older or newer (a larger header carrying its CRC in its last 4 bytes), is refused as unsupported, untouched",
        arguments: [1, 3])
    func otherVersionHeader(version: UInt8) async throws {
        let directory = Self.logWithHeader { bytes in
            bytes[8] = version
            if version > 2 {
                bytes[10] = 56
                bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: 44)
            }
        }
        let before = LogFiles(directory: directory.path).snapshot()
        for readOnly in [true, false] {
            var configuration = testConfiguration(.salvage)
            configuration.readOnly = readOnly
            let error = await #expect(throws: OutboxLogError.self) {
                try await OutboxLog.open(at: directory.path, configuration: configuration)
            }
            #expect(error?.code == .unsupportedFormat, "\(String(describing: error))")
        }
        #expect(LogFiles(directory: directory.path).snapshot() == before)
    }

    @Test("a version-2 header that declares another size is damage")
    func currentVersionWithOtherSize() async throws {
        let directory = Self.logWithHeader { bytes in
            bytes[10] = 56
            bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: 44)
        }
        await Self.expectStrictOpenFails(directory.path, file: Self.segmentName, offset: 0)
    }

    // MARK: Batches and torn tails

    @Test("damage inside a batch is reported at the damaged frame, and the batch's intact records as discarded")
    func damageInsideBatch() async throws {
        var segment = RawSegment(base: 1)
        segment.append(.value(key: "a", payload: [1], sequence: 1))
        let batchStart = Int64(segment.bytes.count)
        segment.append(.value(key: "b1", payload: [2], sequence: 2, flags: 1))
        let damaged = Int64(segment.bytes.count)
        segment.append(.value(key: "b2", payload: [3], sequence: 3, flags: 3))
        segment.append(.value(key: "b3", payload: [4], sequence: 4, flags: 2))
        segment.append(.value(key: "c", payload: [5], sequence: 5))
        segment.append(.marker(sequence: 6, watermark: 5))
        var bytes = segment.bytes
        bytes[Int(damaged) + 30] ^= 0x10  // inside b2's key
        let directory = TemporaryDirectory()
        LogFiles(directory: directory.path).write(bytes, to: directory.appending(Self.segmentName))

        await Self.expectStrictOpenFails(directory.path, file: Self.segmentName, offset: damaged)
        let report = try await Self.verify(directory.path)
        #expect(report.skipped.first?.offset == damaged, "\(report)")
        #expect(report.skipped.contains { $0.offset == batchStart }, "the discarded start of the batch is reported: \(report)")
        #expect(report.liveKeys == 2, "\(report)")
        #expect(report.records == 2, "\(report)")
    }

    @Test("verify counts only what a torn tail leaves readable")
    func tornTailCounts() async throws {
        var segment = RawSegment(base: 1)
        segment.append(.value(key: "a", payload: [1], sequence: 1))
        segment.append(.value(key: "b", payload: [2], sequence: 2))
        let torn = Int64(segment.bytes.count)
        segment.append(.value(key: "c", payload: [3], sequence: 3))
        segment.append(.value(key: "d", payload: [4], sequence: 4, watermark: 1))
        let report = try await Self.verify(segment: segment.bytes, tornAt: torn)
        #expect(report.truncatedTail?.offset == torn, "\(report)")
        #expect(report.truncatedTail?.unreachableRecords == 1, "\(report)")
        #expect(report.records == 2, "\(report)")
        #expect(report.liveKeys == 2, "\(report)")
    }

    @Test("a torn tail's unreachable records are records: a marker after the damage is not counted")
    func unreachableRecordsExcludeMarkers() async throws {
        var segment = RawSegment(base: 1)
        segment.append(.value(key: "a", payload: [1], sequence: 1))
        let torn = Int64(segment.bytes.count)
        segment.append(.value(key: "b", payload: [2], sequence: 2))
        segment.append(.value(key: "c", payload: [3], sequence: 3, watermark: 1))
        segment.append(.marker(sequence: 4, watermark: 1))
        let report = try await Self.verify(segment: segment.bytes, tornAt: torn)
        #expect(report.truncatedTail?.offset == torn, "\(report)")
        #expect(report.truncatedTail?.unreachableRecords == 1, "\(report)")
    }

    @Test("a damaged COMPACTION file is reported by a read-only salvage open, and fails a strict one")
    func damagedIntent() async throws {
        var segment = RawSegment(base: 1)
        segment.append(.value(key: "a", payload: [1], sequence: 1))
        segment.append(.marker(sequence: 2, watermark: 1))
        let directory = TemporaryDirectory()
        let files = LogFiles(directory: directory.path)
        files.write(segment.bytes, to: directory.appending(Self.segmentName))
        files.write(Array("OBXCMPT\n".utf8) + [UInt8](repeating: 7, count: 20), to: directory.appending("COMPACTION"))
        let before = files.snapshot()

        let report = try await Self.verify(directory.path)
        #expect(!report.isClean)
        #expect(report.skipped.first?.file == "COMPACTION", "\(report)")
        #expect(report.skipped.first?.offset == 0, "\(report)")
        #expect(report.liveKeys == 1, "\(report)")
        await Self.expectStrictOpenFails(directory.path, file: "COMPACTION", offset: 0)
        #expect(files.snapshot() == before)
    }
}

/// A segment file written from Docs/FORMAT.md, byte by byte.
struct RawSegment {
    struct Frame {
        var kind: UInt8
        var key: [UInt8]
        var payload: [UInt8]
        var sequence: UInt64
        var flags: UInt8 = 0
        var watermark: UInt64 = 0
        /// Written before the key whenever set, whatever `flags` says.
        var expiry: Int64? = nil

        static func value(key: String, payload: [UInt8], sequence: UInt64, flags: UInt8 = 0, watermark: UInt64 = 0) -> Frame {
            Frame(kind: 1, key: Array(key.utf8), payload: payload, sequence: sequence, flags: flags, watermark: watermark)
        }

        static func marker(sequence: UInt64, watermark: UInt64) -> Frame {
            Frame(kind: 4, key: [], payload: [], sequence: sequence, watermark: watermark)
        }
    }

    var bytes: [UInt8]
    let salt: UInt64

    init(base: UInt64, coverEnd: UInt64? = nil, salt: UInt64 = 0x1234_5678_9ABC_DEF1) {
        self.salt = salt
        var header = Array("OBXLOG\r\n".utf8) + Self.le(UInt16(2)) + Self.le(UInt16(48))
        header += Self.le(UInt32(coverEnd == nil ? 0 : 1)) + Self.le(base) + Self.le(coverEnd ?? 0) + Self.le(salt)
        header += Self.le(UInt32(0))
        bytes = header + Self.le(Self.crc32(header[...]))
    }

    mutating func append(_ frame: Frame) {
        let expiry = frame.expiry.map(Self.le) ?? []
        var body = Self.le(UInt32(28 + expiry.count + frame.key.count + frame.payload.count)) + [frame.kind, frame.flags]
        body += Self.le(UInt16(truncatingIfNeeded: frame.key.count)) + Self.le(frame.sequence) + Self.le(frame.watermark)
        body += expiry + frame.key + frame.payload
        let seed = Self.crc32(Self.le(salt)[...])
        bytes += Self.le(Self.crc32(body[...], continuing: seed)) + body
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// zlib's `crc32(crc, bytes)`, bit by bit.
    static func crc32(_ bytes: ArraySlice<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
