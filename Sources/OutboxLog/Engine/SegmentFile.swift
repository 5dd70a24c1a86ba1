import Foundation
import SystemPackage

/// An open segment file.
///
/// Readers hold a reference while they read, so a segment that compaction
/// deletes stays readable until the last reader lets go: the descriptor is
/// closed when the object is freed (an unlinked file lives on while open).
final class SegmentFile: Sendable {
    /// Identifies the segment in index locations; unique within one open log.
    let id: UInt32
    let header: SegmentHeader
    let crcSeed: UInt32
    /// The file's name once it is in place (a compaction output is read
    /// through its descriptor before its rename).
    let path: FilePath
    let descriptor: FileDescriptor
    let fileSystem: any FileSystem

    init(id: UInt32, header: SegmentHeader, path: FilePath, descriptor: FileDescriptor, fileSystem: any FileSystem) {
        self.id = id
        self.header = header
        self.crcSeed = header.recordCRCSeed
        self.path = path
        self.descriptor = descriptor
        self.fileSystem = fileSystem
    }

    deinit {
        // A failed close of a descriptor whose data was already synced (or
        // was never going to be) changes nothing we promised.
        try? fileSystem.close(descriptor)
    }

    var name: String { path.lastComponent?.string ?? path.string }

    /// Reads and verifies the frame at `location`: the CRC, and that it holds
    /// `key` and `kind`. Never returns bytes that fail verification.
    func readRecord(at offset: Int64, length: Int, expecting key: LogKey) throws(OutboxLogError) -> VerifiedRecord {
        let bytes: [UInt8]
        do { bytes = try fileSystem.readBytes(descriptor, count: length, at: offset) } catch {
            throw .io("cannot read record", error, file: path, offset: offset)
        }
        guard bytes.count == length else {
            throw .corruption(
                "record cut short: the file ends at \(offset + Int64(bytes.count))", file: path, offset: offset,
                damage: .recordCutShort)
        }
        let verified = bytes.withUnsafeBytes { raw in
            Result { () throws(OutboxLogError) in try verify(raw, at: offset, expecting: key) }
        }
        return try verified.get()
    }

    /// Verifies the frame `bytes` read from `offset` (exactly one frame):
    /// the CRC, and that it holds `key`. Never returns bytes that fail.
    func verify(_ bytes: UnsafeRawBufferPointer, at offset: Int64, expecting key: LogKey) throws(OutboxLogError) -> VerifiedRecord {
        let decoded = RecordFrame.decode(
            bytes, at: 0, crcSeed: crcSeed, maximumLength: OutboxLog.Configuration.absoluteMaximumRecordSize)
        switch decoded {
        case .failure(.incomplete):
            throw .corruption("record length changed on disk", file: path, offset: offset, damage: .recordCutShort)
        case .failure(.invalid(let damage)):
            throw .corruption("record no longer verifies: \(damage)", file: path, offset: offset, damage: damage)
        case .success(let frame):
            guard frame.length == bytes.count, bytes[frame.keyRange].elementsEqual(key.bytes) else {
                throw .corruption("record at this offset is not the one the index expects", file: path, offset: offset)
            }
            return VerifiedRecord(
                kind: frame.kind, sequence: frame.sequence, payload: Array(bytes[frame.payloadRange]), expiry: frame.expiry)
        }
    }
}

/// A record read back from disk after its CRC verified.
struct VerifiedRecord: Sendable {
    var kind: FrameKind
    var sequence: UInt64
    var payload: [UInt8]
    var expiry: Int64?
}
