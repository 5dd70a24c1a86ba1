import Outbox

/// What the owner of a damaged copy must list (``StoreOpenCheck``): every
/// acknowledged entry, nothing else. An entry of a damaged spool may be
/// missing only if its spool is reported, or if the spool's own log no
/// longer serves it (``SpoolProbe``); a forged record only if it is set
/// aside and reported.
struct StoreAcknowledged {
    typealias Written = StoreBase.Written
    typealias Violation = StoreOpenCheck.Violation

    /// Must be there, with these fields.
    var required: [OutboxEntry.ID: Written]
    /// The entries of each damaged spool, by the spool's name.
    var damaged: [String: [OutboxEntry.ID: Written]] = [:]
    /// Forged records that may be taken (with these fields) or set aside.
    var forged: [OutboxEntry.ID: (Written, spool: String)] = [:]

    init(base: StoreBase, expectations: StoreExpectations) {
        required = base.live
        for spool in base.spools {
            if expectations.damagedSpools.contains(spool.name) {
                damaged[spool.name] = spool.entries
            } else {
                required.merge(spool.entries) { old, _ in old }
            }
        }
        for spool in expectations.forged {
            required.merge(spool.good) { old, _ in old }
            if !spool.forgery.mustBeSetAside { forged[spool.forged] = (spool.forgedWritten, spool.name) }
        }
    }

    /// Checks the listed `entries` against what was acknowledged; returns
    /// how many entries of damaged spools their own logs no longer served.
    func check(
        _ entries: [OutboxEntry.ID: OutboxEntry], report: OutboxSpoolReport, probes: [String: SpoolProbe]
    ) throws -> Int {
        func reported(_ spool: String) -> Bool {
            let hex = String(spool.dropFirst("spool+".count))
            return report.problems.contains { $0.path.string.contains(hex) }
        }
        for (id, written) in required.sorted(by: { $0.key.description < $1.key.description }) {
            guard let entry = entries[id] else { throw Violation("acknowledged entry \(id) is missing (spools: \(report))") }
            if !StoreOpenCheck.same(entry, written) { throw Violation("\(id) reads back other fields than were written") }
        }
        var cut = 0
        for (spool, written) in damaged.sorted(by: { $0.key < $1.key }) {
            let present = written.filter { entries[$0.key] != nil }
            for (id, fields) in present where !StoreOpenCheck.same(entries[id]!, fields) {
                throw Violation("\(id), spooled in damaged \(spool), reads back other fields than were written")
            }
            guard present.count < written.count, !reported(spool) else { continue }
            let probe = probes[spool] ?? SpoolProbe(opens: false, entries: 0, tailCut: false)
            guard probe.opens, present.count >= probe.entries else {
                throw Violation(
                    "\(written.count - present.count) entries acknowledged in damaged \(spool) are gone and nothing was reported "
                        + "(its log \(probe.opens ? "serves \(probe.entries)" : "does not open")\(probe.tailCut ? ", a torn tail cut" : ""); "
                        + "spools: \(report))")
            }
            cut += written.count - present.count
        }
        for (id, (written, spool)) in forged {
            if let entry = entries[id] {
                if !StoreOpenCheck.same(entry, written) { throw Violation("forged \(id) was taken with other fields") }
            } else if !reported(spool) {
                throw Violation("forged \(id) is neither in the queue nor reported (spools: \(report))")
            }
        }
        for id in entries.keys where required[id] == nil && forged[id] == nil && !damaged.values.contains(where: { $0[id] != nil }) {
            throw Violation("an entry no one acknowledged: \(id) (\(entries[id]!.type) \(entries[id]!.endpoint))")
        }
        return cut
    }
}
