/// Why a segment header does not read (Docs/FORMAT.md, "Reading a header,
/// step by step").
public enum SegmentHeaderDamage: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file is shorter than the header it declares.
    case truncated
    /// The first eight bytes are not the magic: not a segment, or damaged.
    case badMagic
    /// The header's CRC fails.
    case badChecksum
    /// The header verifies but was written by a format version this library does not read.
    case unsupportedVersion(UInt16)
    /// The declared size is below a header's.
    case sizeBelowMinimum(Int)
    /// A header of the current version that declares another size than its version's.
    case unexpectedSize(Int)
    case unknownFlags(UInt32)
    case zeroSalt
    case reservedNotZero(UInt32)
    case zeroBase
    /// A base or cover end at or above 2^63, where sequence numbers stop.
    case beyondSequenceLimit(UInt64)
    /// A rewritten segment whose cover end is before its base.
    case coverEndBeforeBase(end: UInt64, base: UInt64)
    /// An appended segment with a cover end.
    case coverEndOnAppended

    public var description: String {
        switch self {
        case .truncated: "truncated"
        case .badMagic: "badMagic"
        case .badChecksum: "badChecksum"
        case .unsupportedVersion(let version): "unsupportedVersion(\(version))"
        case .sizeBelowMinimum(let size): "header size \(size) is below \(SegmentHeader.size)"
        case .unexpectedSize(let size): "header size \(size) in a version-\(SegmentHeader.currentVersion) header"
        case .unknownFlags(let flags): "unknown flags \(flags)"
        case .zeroSalt: "zero salt"
        case .reservedNotZero(let reserved): "reserved field \(reserved) is not zero"
        case .zeroBase: "base sequence 0"
        case .beyondSequenceLimit(let value): "sequence \(value) is beyond 2^63"
        case .coverEndBeforeBase(let end, let base): "cover end \(end) before base \(base)"
        case .coverEndOnAppended: "cover end set on an appended segment"
        }
    }
}
