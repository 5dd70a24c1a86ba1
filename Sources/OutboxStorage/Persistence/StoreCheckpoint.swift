import Crypto
import OutboxLog
import SystemPackage
import OutboxModel

/// The store checkpoint (`SCHEDULE`, in the queue's directory beside the
/// log): the scheduler's entries, failures, completions and names as they
/// stood once every record up to a log position was applied, so a reopen
/// reads this file and re-reads only the entries whose records changed
/// after that position, instead of every entry's body (Docs/STORE-FORMAT.md,
/// "The outbox store's checkpoint").
///
/// ```
/// header (in the clear):
///   8  magic "OBXSCHD\n"
///   2  version (4)
///   2  flags: bit 0 = the body is sealed (AES-GCM under the queue's key)
///   4  header size H
///   8  next entry sequence number
///   8  body size in bytes, as stored
///   4  CRC-32 of the stored body
///   …  log position (``LogPosition``: u64 sequence, u32 n, n × (u64 base, u64 salt))
///   …  sealed only: u32 length and an AES-GCM box of nothing, the key
///      check, authenticating every header byte before its length field
///   4  CRC-32 of the header before it
/// body, plain (``StoreCheckpointBody``) or one AES-GCM box of it, bound
/// to the position
/// ```
///
/// With encryption on, everything the app wrote (ids, types, scopes, keys,
/// errors, server ids) is inside the sealed body; the header holds only
/// what the log's own files show anyway (sequence numbers, segment bases
/// and salts, sizes). The key check box lets a reopen prove the key — and
/// that nobody changed a header value, the next sequence number included —
/// before anything is read or written, without waiting for the log's index.
///
/// A checkpoint is only a shortcut (``Trust``): one that cannot be
/// authenticated where a key is configured, a sealed one where none is, or
/// one whose values no store writes is not used; the open then reads every
/// entry, and the log's own key check decides about the key.
package struct StoreCheckpoint: Sendable {
    static let fileName = "SCHEDULE"
    static let magic: [UInt8] = Array("OBXSCHD\n".utf8)
    static let version: UInt16 = 4
    static let sealedFlag: UInt16 = 1
    /// The fixed part of the header, before the position.
    package static let fixedSize = 36

    /// The log position the checkpoint reflects.
    package var position: LogPosition
    /// The scheduler's next entry sequence number when it was taken.
    package var nextSequence: UInt64
    package var sealed: Bool
    package var headerSize: Int
    package var bodySize: Int
    var bodyCRC: UInt32
    /// Sealed only: the key check box.
    var keyCheck: [UInt8]
    /// The header bytes the key check authenticates.
    var keyCheckedHeader: [UInt8] = []

    /// What an open may do with a checkpoint.
    package enum Trust: Sendable, Equatable {
        /// It was written with this key (or, plain, with none): load from it.
        case usable
        /// It cannot be shown to be this queue's as it stands — plain where
        /// a key is configured, sealed where none is, or a key check that
        /// does not open (another key, or a changed header): read every
        /// entry, and let the log's key check decide about the key.
        case unverified
    }

    /// Why a checkpoint was not used (the store then reads every entry).
    package struct Rejection: Error, Sendable, CustomStringConvertible {
        var reason: String
        package var description: String { reason }
    }

    // MARK: Writing

    /// The whole file: `body` (``StoreCheckpointBody/encode(_:format:)``),
    /// sealed under the format's key if it has one.
    package static func file(
        body plain: [UInt8], position: LogPosition, nextSequence: UInt64, format: RecordFormat
    ) throws(OutboxError) -> [UInt8] {
        let positionBytes = position.encoded()
        var body = plain
        if let sealer = format.sealer {
            body = try sealer.seal(plain, .checkpoint, partition: format.partition, binding: positionBytes)
        }
        let headerSize = fixedSize + positionBytes.count + (format.isSealed ? 4 + RecordSealer.overhead : 0) + 4
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize + body.count)
        bytes += magic
        bytes.appendLittleEndian(version)
        bytes.appendLittleEndian(format.isSealed ? sealedFlag : 0)
        bytes.appendLittleEndian(UInt32(headerSize))
        bytes.appendLittleEndian(nextSequence)
        bytes.appendLittleEndian(UInt64(body.count))
        bytes.appendLittleEndian(CRC32.checksum(body))
        bytes += positionBytes
        if let sealer = format.sealer {
            let keyCheck = try sealer.seal([], .checkpoint, partition: format.partition, binding: keyCheckBinding(bytes))
            bytes.appendLittleEndian(UInt32(keyCheck.count))
            bytes += keyCheck
        }
        bytes.appendLittleEndian(CRC32.checksum(bytes))
        bytes += body
        return bytes
    }

    // MARK: Reading

    /// The header at the start of `path`, or `nil` if there is no file;
    /// throws a ``Rejection`` if there is one but it does not verify.
    package static func readHeader(_ path: FilePath, fileSystem: any FileSystem) throws -> StoreCheckpoint? {
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw Rejection(reason: "cannot open the checkpoint: \(error)")
        }
        defer { try? fileSystem.close(descriptor) }
        let fixed = try read(descriptor, count: fixedSize, at: 0, fileSystem: fileSystem)
        let headerSize: Int = try fixed.withUnsafeBytes { raw in
            guard raw.count == fixedSize, raw.prefix(8).elementsEqual(magic) else {
                throw Rejection(reason: "not a store checkpoint (bad magic or too short)")
            }
            return Int(clamping: raw.loadLittleEndian(at: 12, as: UInt32.self))
        }
        guard headerSize > fixedSize + 12 + 4, headerSize <= 1 << 24 else { throw Rejection(reason: "implausible header size") }
        let size: Int64
        do { size = try fileSystem.size(of: descriptor) } catch { throw Rejection(reason: "cannot read the checkpoint's size") }
        // Nothing is allocated for a header the file cannot hold.
        guard Int64(headerSize) <= size else { throw Rejection(reason: "the checkpoint's header is cut short") }
        let header = try read(descriptor, count: headerSize, at: 0, fileSystem: fileSystem)
        guard header.count == headerSize else { throw Rejection(reason: "the checkpoint's header is cut short") }
        var checkpoint = try decodeHeader(header)
        guard size == Int64(headerSize + checkpoint.bodySize) else {
            throw Rejection(reason: "the checkpoint file is \(size) bytes, not the size its header gives")
        }
        checkpoint.headerSize = headerSize
        return checkpoint
    }

    /// What the key check authenticates: "key check" and every header byte
    /// before the key check's length.
    private static func keyCheckBinding(_ headerBefore: some Collection<UInt8>) -> [UInt8] {
        Array("key check".utf8) + headerBefore
    }

    package static func decodeHeader(_ header: [UInt8]) throws -> StoreCheckpoint {
        try header.withUnsafeBytes { raw in
            let stored: UInt32 = raw.loadLittleEndian(at: raw.count - 4)
            guard stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - 4)])) else {
                throw Rejection(reason: "the checkpoint's header fails its CRC")
            }
            let version: UInt16 = raw.loadLittleEndian(at: 8)
            guard version == Self.version else {
                throw Rejection(reason: "checkpoint version \(version) is not one this library reads (\(Self.version))")
            }
            let flags: UInt16 = raw.loadLittleEndian(at: 10)
            guard flags & ~sealedFlag == 0 else { throw Rejection(reason: "unknown checkpoint flags \(flags)") }
            let sealed = flags & sealedFlag != 0
            let rest = UnsafeRawBufferPointer(rebasing: raw[fixedSize..<(raw.count - 4)])
            guard let (position, used) = LogPosition.decode(rest) else {
                throw Rejection(reason: "the checkpoint's log position is cut short")
            }
            var keyCheck: [UInt8] = []
            var end = used
            let keyCheckedBytes = fixedSize + used
            if sealed {
                guard end + 4 <= rest.count else { throw Rejection(reason: "the checkpoint's key check is cut short") }
                let count = Int(clamping: rest.loadLittleEndian(at: end, as: UInt32.self))
                guard count <= rest.count - end - 4 else { throw Rejection(reason: "the checkpoint's key check is cut short") }
                keyCheck = Array(rest[(end + 4)..<(end + 4 + count)])
                end += 4 + count
            }
            guard end == rest.count else { throw Rejection(reason: "the checkpoint's header is inconsistent") }
            let bodySize = raw.loadLittleEndian(at: 24, as: UInt64.self)
            guard bodySize <= UInt64(Int32.max) * 64 else { throw Rejection(reason: "implausible body size") }
            let nextSequence: UInt64 = raw.loadLittleEndian(at: 16)
            guard nextSequence >= 1, nextSequence <= EntryMetadata.sequenceLimit else {
                throw Rejection(reason: "next sequence number \(nextSequence) is not one a store writes")
            }
            return StoreCheckpoint(
                position: position, nextSequence: nextSequence, sealed: sealed, headerSize: raw.count,
                bodySize: Int(bodySize), bodyCRC: raw.loadLittleEndian(at: 32), keyCheck: keyCheck,
                keyCheckedHeader: Array(raw[..<keyCheckedBytes]))
        }
    }

    /// Whether an open configured with `format`'s key (or none) may load
    /// from this checkpoint.
    package func trust(for format: RecordFormat) -> Trust {
        switch (sealed, format.sealer) {
        case (false, nil): return .usable
        case (false, .some), (true, nil): return .unverified
        case (true, let sealer?):
            let opens =
                (try? sealer.open(
                    keyCheck, .checkpoint, partition: format.partition, binding: Self.keyCheckBinding(keyCheckedHeader))) != nil
            return opens ? .usable : .unverified
        }
    }

    /// The plain body, read from `path` and verified (CRC, and with a key,
    /// AES-GCM's authentication bound to the position).
    package func readBody(_ path: FilePath, format: RecordFormat, fileSystem: any FileSystem) throws -> [UInt8] {
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
            throw Rejection(reason: "cannot open the checkpoint: \(error)")
        }
        defer { try? fileSystem.close(descriptor) }
        let stored = try Self.read(descriptor, count: bodySize, at: Int64(headerSize), fileSystem: fileSystem)
        guard stored.count == bodySize, CRC32.checksum(stored) == bodyCRC else {
            throw Rejection(reason: "the checkpoint's body fails its CRC")
        }
        guard sealed else { return stored }
        guard let sealer = format.sealer,
            let plain = try? sealer.open(stored, .checkpoint, partition: format.partition, binding: position.encoded())
        else { throw Rejection(reason: "the checkpoint's body fails authentication") }
        return plain
    }

    private static func read(
        _ descriptor: FileDescriptor, count: Int, at offset: Int64, fileSystem: any FileSystem
    ) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read: Int
            do {
                read = try bytes.withUnsafeMutableBytes { (raw) throws(Errno) -> Int in
                    try fileSystem.read(
                        descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[done...]), at: offset + Int64(done))
                }
            } catch {
                throw Rejection(reason: "cannot read the checkpoint: \(error)")
            }
            if read == 0 { break }
            done += read
        }
        return Array(bytes[..<done])
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    func loadLittleEndian<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
