/// Why a compaction intent (`COMPACTION`, Docs/FORMAT.md) does not read.
public enum CompactionIntentDamage: Sendable, Hashable, CustomStringConvertible {
    /// Not a compaction intent: a bad magic, or too short.
    case badMagic
    /// Its CRC does not match its bytes.
    case crcMismatch
    /// Its counts or flags do not match its size.
    case inconsistent

    public var description: String {
        switch self {
        case .badMagic: "bad magic"
        case .crcMismatch: "CRC mismatch"
        case .inconsistent: "inconsistent counts or flags"
        }
    }
}
