import Foundation
import OutboxLog
import Testing

/// What the fuzz targets (Fuzz/README.md) found in the format's decoders,
/// one test per finding; the inputs themselves are in Fuzz/regressions.
@Suite("Fuzz findings: the log format")
struct FuzzFindingsTests {
    /// The `segment-header` target: a header whose reserved bytes 40..<44
    /// are not zero (and whose CRC covers them) decoded as valid, though it
    /// is not what the engine writes and the spec says the field is zero.
    @Test("a segment header with a non-zero reserved field is damage: the strict open refuses it and changes nothing")
    func reservedHeaderField() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
        try await log.put("a", [1], durability: .durable)
        try await log.close()
        let files = LogFiles(directory: directory.path)
        let segment = try #require(files.segments.first)
        var header = Array(files.read(segment)[..<segmentHeaderSize])
        header[41] = 0x20
        let crc = CRC32.checksum(header[..<44])
        header.replaceSubrange(44..<48, with: withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        try files.overwrite(segment, at: 0, with: header)
        let before = files.snapshot()

        do {
            let reopened = try await OutboxLog.open(at: directory.path, configuration: testConfiguration())
            try await reopened.close()
            Issue.record("a header with a non-zero reserved field opened as valid")
        } catch {
            #expect(error.code == .corruption, "\(error)")
            #expect(error.file == segment, "\(error)")
        }
        #expect(files.snapshot() == before)
    }
}
