import Foundation
import Outbox
import OutboxLogTesting

extension StoreDamage {
    /// The three extremes a field of `width` bytes can hold: all ones
    /// (2^64−1 for a u64), the top bit alone (2^63), zero.
    static func extremes(width: Int) -> [UInt64] {
        let bits = UInt64(8 * width)
        return [bits == 64 ? .max : (1 << bits) - 1, 1 << (bits - 1), 0]
    }

    /// A damage of `kind` to `tree`, a copy of `base` (maybe damaged already).
    static func draw(_ kind: Kind, base: StoreBase, tree: FileTree, _ random: inout SplitMix64) -> StoreDamage {
        let checkpoint = tree.files[base.checkpointPath] ?? base.tree.files[base.checkpointPath] ?? []
        func flips(_ range: Range<Int>) -> [Damage.BitFlip] {
            (0..<(1 + random.next(below: 4))).map { _ in
                Damage.BitFlip(offset: range.lowerBound + random.next(below: max(1, range.count)), bit: random.next(below: 8))
            }
        }
        switch kind {
        case .checkpointFlips, .checkpointFlipsRepaired:
            let header = min(CheckpointBytes.headerSize(checkpoint), checkpoint.count)
            let inHeader = header >= checkpoint.count || random.nextBool()
            return .checkpointFlips(
                flips(inHeader ? 0..<max(1, header) : header..<checkpoint.count), inHeader: inHeader,
                repaired: kind == .checkpointFlipsRepaired)
        case .checkpointHeaderValue:
            let field = CheckpointBytes.headerFields[random.next(below: CheckpointBytes.headerFields.count)]
            let values = extremes(width: field.width)
            return .checkpointValue(field, values[random.next(below: values.count)], count: false)
        case .checkpointCount:
            // A plain body's counts, and (either format) the position's segment count.
            let fields = CheckpointBytes.counts(checkpoint) + [CheckpointBytes.positionCount]
            let field = fields[random.next(below: fields.count)]
            let values = extremes(width: field.width)
            return .checkpointValue(field, values[random.next(below: values.count)], count: true)
        case .checkpointTruncated:
            return .checkpointTruncated(at: random.next(below: max(1, checkpoint.count)))
        case .checkpointOtherFormat, .checkpointOtherQueue, .checkpointOlder:
            return .checkpointReplaced(kind)
        case .spoolSegment:
            let index = random.next(below: base.spools.count)
            let files = tree.subtree(base.spoolsPath + "/" + base.spools[index].name).files
            let damage = Damage.draw(files: files, foreign: files, &random) ?? .truncation(file: "none", at: 0)
            return .spoolSegment(spool: index, damage)
        case .spoolName:
            return craftedSpoolName(base: base, &random)
        case .spoolsStray:
            return strayInSpools(&random)
        case .forgedRecord:
            return .forgedSpool(random.next(below: base.forged.count))
        case .payloadStrayDirectory:
            let hex = random.nextBytes(32).map { String(format: "%02x", $0) }.joined()
            let names = ["stray", String(hex.prefix(32)) + "-" + String(hex.suffix(32)), "ünicode", ".hidden"]
            return .payloadStrayDirectory(names[random.next(below: names.count)])
        case .payloadForeignFile:
            return foreignPayloadFile(base: base, &random)
        case .payloadTruncated, .payloadFlipped:
            let victims = base.payloadFiles.keys.sorted { $0.description < $1.description }
            let victim = victims[random.next(below: victims.count)]
            let size = tree.files[base.payloadFiles[victim]!]?.count ?? 1
            return kind == .payloadTruncated
                ? .payloadCut(victim, at: random.next(below: max(1, size)))
                : .payloadFlipped(victim, flips(0..<size))
        }
    }

    /// A copy of a spool under a name that is no spool's: capitals, a
    /// non-ASCII letter or digit, one digit short or long, non-hex letters.
    private static func craftedSpoolName(base: StoreBase, _ random: inout SplitMix64) -> StoreDamage {
        let index = random.next(below: base.spools.count)
        let hex = String(base.spools[index].name.dropFirst("spool+".count))
        let names: [String] = [
            "spool+" + hex.uppercased(), "spool+" + String(hex.dropLast()) + "é", "spool+" + String(hex.dropLast()),
            "spool+" + hex + "0", "spool+" + "٣" + String(hex.dropFirst()), "spool+" + String(hex.dropLast(2)) + "zz",
        ]
        return .spoolName(names[random.next(below: names.count)], copyOf: index)
    }

    private static func strayInSpools(_ random: inout SplitMix64) -> StoreDamage {
        let stray = Stray.allCases[random.next(below: Stray.allCases.count)]
        let hex = random.nextBytes(16).map { String(format: "%02x", $0) }.joined()
        let name: String =
            switch stray {
            case .file: ["notes.txt", "spool+", "spool", ".DS_Store"][random.next(below: 4)]
            case .directory: ["spool+junk", "tmp", "spool+.lock"][random.next(below: 3)]
            case .fileNamedAsSpool, .emptySpool: "spool+" + hex
            case .guardDirectory: "spool+" + hex + ".lock"
            case .pokeDirectory: "POKE"
            }
        return .spoolsStray(stray, name: name)
    }

    /// A file no store wrote in `payloads/`: a name of another form, one of
    /// the right form naming no entry, or a live entry's file under a name
    /// of its entry's with another file id, or in capitals.
    private static func foreignPayloadFile(base: StoreBase, _ random: inout SplitMix64) -> StoreDamage {
        let victims = base.payloadFiles.keys.sorted { $0.description < $1.description }
        let victim = victims[random.next(below: victims.count)]
        let real = base.payloadFiles[victim]!.split(separator: "/").last.map(String.init) ?? ""
        let hex = random.nextBytes(32).map { String(format: "%02x", $0) }.joined()
        switch random.next(below: 5) {
        case 0: return .payloadForeignFile("notes.txt", copy: nil)
        case 1: return .payloadForeignFile(String(hex.prefix(32)) + "-" + String(hex.suffix(32)), copy: nil)
        case 2: return .payloadForeignFile(String(real.prefix(32)) + "-" + String(hex.suffix(32)), copy: victim)
        case 3: return .payloadForeignFile(real.uppercased(), copy: victim)
        default: return .payloadForeignFile(real + ".tmp", copy: victim)
        }
    }
}
