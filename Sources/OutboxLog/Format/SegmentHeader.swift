/// The fixed header at the start of every segment file.
///
/// ```
/// offset size field
///      0    8 magic "OBXLOG\r\n"
///      8    2 format version (2)
///     10    2 header size in bytes (48)
///     12    4 flags: bit 0 = the segment was rewritten (compaction or
///               salvage) and `coverEnd` is set
///     16    8 base sequence: no record in the file has a smaller sequence
///     24    8 cover end: for a rewritten segment, the first sequence
///               number it does *not* cover (the next segment's base);
///               0 for a segment that was appended to directly
///     32    8 salt: random per file; seeds every record's CRC, so bytes
///               from another file or another log never verify here
///     40    4 reserved, zero
///     44    4 CRC-32 of bytes 0..<44
/// ```
/// Every version keeps bytes 0..<12 where they are and puts the CRC in the
/// header's last four bytes (`header size - 4`).
/// All integers are little-endian. See Docs/FORMAT.md.
package struct SegmentHeader: Sendable, Hashable {
    static let magic: [UInt8] = Array("OBXLOG\r\n".utf8)
    package static let currentVersion: UInt16 = 2
    package static let size = 48

    static let rewrittenFlag: UInt32 = 1

    package var baseSequence: UInt64
    package var coverEnd: UInt64?
    var salt: UInt64

    /// Every sequence number, base and cover end is below this (2^63): a
    /// header or record numbered at or above it is damage, so that no
    /// reader ever adds one to `UInt64.max` (Docs/FORMAT.md, "Sequence rules").
    package static let sequenceLimit: UInt64 = 1 << 63

    package init(baseSequence: UInt64, coverEnd: UInt64?, salt: UInt64) {
        self.baseSequence = baseSequence
        self.coverEnd = coverEnd
        self.salt = salt
    }

    /// The CRC state every record in this segment starts from.
    package var recordCRCSeed: UInt32 {
        withUnsafeBytes(of: salt.littleEndian) { CRC32.checksum($0) }
    }

    package func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.size)
        bytes.append(contentsOf: Self.magic)
        bytes.appendLittleEndian(Self.currentVersion)
        bytes.appendLittleEndian(UInt16(Self.size))
        bytes.appendLittleEndian(coverEnd == nil ? UInt32(0) : Self.rewrittenFlag)
        bytes.appendLittleEndian(baseSequence)
        bytes.appendLittleEndian(coverEnd ?? 0)
        bytes.appendLittleEndian(salt)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(CRC32.checksum(bytes))
        return bytes
    }

    package typealias DecodeError = SegmentHeaderDamage

    /// Decodes a header from the first bytes of a file, in the order
    /// Docs/FORMAT.md gives ("Reading a header, step by step"): the CRC sits
    /// in the last four bytes of the size the header declares, in every
    /// version, and is checked before the version, so only a header that
    /// verifies as a whole can be "newer"; a bit flip in a current header
    /// is damage.
    package static func decode(_ bytes: UnsafeRawBufferPointer) -> Result<SegmentHeader, DecodeError> {
        guard bytes.count >= 12 else { return .failure(.truncated) }
        guard bytes.prefix(8).elementsEqual(magic) else { return .failure(.badMagic) }
        let version: UInt16 = bytes.loadLittleEndian(at: 8)
        let declaredSize = Int(bytes.loadLittleEndian(at: 10, as: UInt16.self))
        guard declaredSize >= size else { return .failure(.sizeBelowMinimum(declaredSize)) }
        guard declaredSize <= bytes.count else { return .failure(.truncated) }
        let stored: UInt32 = bytes.loadLittleEndian(at: declaredSize - 4)
        guard stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<(declaredSize - 4)])) else {
            return .failure(.badChecksum)
        }
        guard version == currentVersion else { return .failure(.unsupportedVersion(version)) }
        guard declaredSize == size else { return .failure(.unexpectedSize(declaredSize)) }
        let flags: UInt32 = bytes.loadLittleEndian(at: 12)
        guard flags & ~rewrittenFlag == 0 else { return .failure(.unknownFlags(flags)) }
        let base: UInt64 = bytes.loadLittleEndian(at: 16)
        let end: UInt64 = bytes.loadLittleEndian(at: 24)
        let salt: UInt64 = bytes.loadLittleEndian(at: 32)
        let reserved: UInt32 = bytes.loadLittleEndian(at: 40)
        guard salt != 0 else { return .failure(.zeroSalt) }
        guard reserved == 0 else { return .failure(.reservedNotZero(reserved)) }
        // Sequence numbers start at 1.
        guard base != 0 else { return .failure(.zeroBase) }
        guard base < sequenceLimit else { return .failure(.beyondSequenceLimit(base)) }
        let rewritten = flags & rewrittenFlag != 0
        if rewritten && end < base { return .failure(.coverEndBeforeBase(end: end, base: base)) }
        if rewritten && end > sequenceLimit { return .failure(.beyondSequenceLimit(end)) }
        if !rewritten && end != 0 { return .failure(.coverEndOnAppended) }
        return .success(SegmentHeader(baseSequence: base, coverEnd: rewritten ? end : nil, salt: salt))
    }
}
