import Outbox
import OutboxLogTesting

/// One way the store's own files beside its log get damaged — its
/// checkpoint (`SCHEDULE`), its spools, its payload files — applied to an
/// in-memory copy of a real outbox root (``StoreBase``).
enum StoreDamage: Sendable, CustomStringConvertible {
    /// What is damaged, for tallies: every kind runs in turn.
    enum Kind: String, CaseIterable, Sendable {
        case checkpointFlips = "SCHEDULE bit flips"
        case checkpointFlipsRepaired = "SCHEDULE bit flips, CRCs repaired"
        case checkpointHeaderValue = "SCHEDULE header field set to an extreme, CRCs repaired"
        case checkpointCount = "SCHEDULE count set to an extreme, CRCs repaired"
        case checkpointTruncated = "SCHEDULE truncated"
        case checkpointOtherFormat = "SCHEDULE of the other format (plain for sealed, sealed for plain)"
        case checkpointOtherQueue = "SCHEDULE of another queue"
        case checkpointOlder = "SCHEDULE of an older copy of the queue"
        case spoolSegment = "spool's log damaged"
        case spoolName = "spool copied under a crafted name"
        case spoolsStray = "stray in the spools directory"
        case forgedRecord = "spooled record forged"
        case payloadStrayDirectory = "directory in payloads/"
        case payloadForeignFile = "foreign file in payloads/"
        case payloadTruncated = "payload file truncated"
        case payloadFlipped = "payload file bit-flipped"

        /// The kinds a case of a plain or a sealed queue draws from. Random
        /// bits changed in a plain checkpoint with its CRCs made to match
        /// are a forgery, not damage: a plain queue cannot tell one from the
        /// truth, in its checkpoint as in its log (Docs/SECURITY.md, "With
        /// encryption off"). Only a sealed checkpoint is held to catching them.
        static func applicable(sealed: Bool) -> [Kind] {
            allCases.filter { sealed || $0 != .checkpointFlipsRepaired }
        }
    }

    /// A stray in the spools directory.
    enum Stray: String, Sendable, CaseIterable {
        case file = "a file of another name"
        case directory = "a directory of another name"
        case fileNamedAsSpool = "a file named as a spool"
        case emptySpool = "an empty directory named as a spool"
        case guardDirectory = "a directory named as a spool's guard"
        case pokeDirectory = "a directory named POKE"
    }

    case checkpointFlips([Damage.BitFlip], inHeader: Bool, repaired: Bool)
    case checkpointValue(CheckpointBytes.Field, UInt64, count: Bool)
    case checkpointTruncated(at: Int)
    case checkpointReplaced(Kind)
    /// A base spool (by index) damaged as a log is.
    case spoolSegment(spool: Int, Damage)
    /// A copy of a base spool (by index) under a name that is no spool's.
    case spoolName(String, copyOf: Int)
    case spoolsStray(Stray, name: String)
    /// A forged spool of the base (by index) added.
    case forgedSpool(Int)
    case payloadStrayDirectory(String)
    /// A file in `payloads/`, a copy of a live entry's when `copy`.
    case payloadForeignFile(String, copy: OutboxEntry.ID?)
    case payloadCut(OutboxEntry.ID, at: Int)
    case payloadFlipped(OutboxEntry.ID, [Damage.BitFlip])

    var kind: Kind {
        switch self {
        case .checkpointFlips(_, _, let repaired): repaired ? .checkpointFlipsRepaired : .checkpointFlips
        case .checkpointValue(_, _, let count): count ? .checkpointCount : .checkpointHeaderValue
        case .checkpointTruncated: .checkpointTruncated
        case .checkpointReplaced(let kind): kind
        case .spoolSegment: .spoolSegment
        case .spoolName: .spoolName
        case .spoolsStray: .spoolsStray
        case .forgedSpool: .forgedRecord
        case .payloadStrayDirectory: .payloadStrayDirectory
        case .payloadForeignFile: .payloadForeignFile
        case .payloadCut: .payloadTruncated
        case .payloadFlipped: .payloadFlipped
        }
    }

    var description: String {
        switch self {
        case .checkpointFlips(let flips, let inHeader, let repaired):
            "\(flips.count) bit flip(s) in SCHEDULE's \(inHeader ? "header" : "body") at "
                + flips.map { "\($0.offset).\($0.bit)" }.joined(separator: ", ") + (repaired ? ", CRCs repaired" : "")
        case .checkpointValue(let field, let value, _): "SCHEDULE's \(field) set to \(value), CRCs repaired"
        case .checkpointTruncated(let at): "SCHEDULE truncated to \(at) bytes"
        case .checkpointReplaced(let kind): kind.rawValue
        case .spoolSegment(let spool, let damage): "spool \(spool): \(damage)"
        case .spoolName(let name, let spool): "spool \(spool) copied as \(name)"
        case .spoolsStray(let stray, let name): "\(stray.rawValue) in the spools directory: \(name)"
        case .forgedSpool(let index): "a forged spool (\(SpoolForging.Forgery.allCases[index].rawValue))"
        case .payloadStrayDirectory(let name): "a directory payloads/\(name)"
        case .payloadForeignFile(let name, let copy): "a file payloads/\(name)" + (copy.map { ", a copy of \($0)'s" } ?? "")
        case .payloadCut(let id, let at): "\(id)'s payload file cut to \(at) bytes"
        case .payloadFlipped(let id, let flips): "\(flips.count) bit flip(s) in \(id)'s payload file"
        }
    }
}

/// What a case's damages allow and require of the owner's open, beyond the
/// base's entries.
struct StoreExpectations: Sendable {
    /// Base spools whose entries may be missing — if the spool is reported.
    var damagedSpools: Set<String> = []
    /// Forged spools added.
    var forged: [StoreBase.ForgedSpool] = []
    /// Paths that no open may delete.
    var kept: [String] = []
    /// Names in `payloads/` the open must report (moved aside or removed).
    var payloadStrays: [String] = []
    /// Live entries whose payload file is damaged.
    var damagedPayloads: Set<OutboxEntry.ID> = []
}
