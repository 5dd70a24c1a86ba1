import Outbox
import OutboxLog

extension SpoolFuzzing {
    /// What the seeds are made from: what a real spool holds.
    package struct SeedSpools: Sendable {
        /// The names in a queue's spools directory (spools and guards).
        package var names: [String] = []
        /// Entry records (log key, value) and whether their queue is sealed.
        package var records: [(key: [UInt8], value: [UInt8], sealed: Bool)] = []
        /// Sequence numbers of spool records, as marks record them.
        package var marks: [UInt64] = []

        package init() {}
    }

    /// Seed inputs: each name (and a few a store never makes), each mark,
    /// each record (a plain one also with its key taken from its body), and
    /// each record's value set aside.
    package static func seeds(_ spools: SeedSpools) throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        var names = spools.names
        if let spool = spools.names.first(where: { !$0.hasSuffix(SpoolLayout.guardSuffix) }) {
            let hex = String(spool.dropFirst(SpoolLayout.spoolPrefix.count))
            names += [hex, hex.uppercased(), "spool+" + hex.dropLast(2) + "é", SpoolLayout.pokeName]
        }
        for name in names { seeds.append([0] + Array(name.utf8)) }
        for mark in Set(spools.marks).sorted() { seeds.append([1] + withUnsafeBytes(of: mark.littleEndian) { Array($0) }) }
        for (key, value, sealed) in spools.records {
            let sealedBit: UInt8 = sealed ? 4 : 0
            seeds.append([2 | sealedBit] + key + value)
            if !sealed { seeds.append([2 | 8] + key + value) }
            let format = format(sealed: sealed)
            let records = SetAsideRecords(queue: "/seed", format: format, fileSystem: PosixFileSystem())
            let plain = (try? format.plainBody(value, key: LogKey(key))) ?? value
            seeds.append([3 | sealedBit] + (try records.encode(plain, name: setAsideName)))
        }
        return seeds
    }
}
