import Foundation
import Outbox
import OutboxLogTesting
import SystemPackage

/// The store cases of the corrupt mode: damage to the outbox store's own
/// files beside its log — its checkpoint (`SCHEDULE`), its spools, its
/// payload files (``StoreDamage``) — in copies of a real outbox root
/// (``StoreBase``: plain, or sealed with `--encrypted`), each opened by the
/// queue's owner and held to ``StoreOpenCheck``: a bad file is set aside,
/// never fatal to the store.
///
/// One cycle in ``every`` of the mode is a store case. The kinds of damage
/// run in turn (sometimes a second one is drawn on top), so that a few
/// dozen cases meet every kind; the first case of each base is an undamaged
/// control.
struct StoreCorruption {
    /// One cycle in `every` is a store case: they cost several opens each.
    static let every = 4
    /// Store cases per base before a new one is made.
    static let casesPerBase = 25

    static func isStoreCase(_ cycle: Int) -> Bool { cycle % every == every - 1 }

    /// The store case a cycle is (for ``isStoreCase(_:)`` cycles).
    static func index(ofCycle cycle: Int) -> Int { cycle / every }

    /// Where bases are made (the real disk, under `--dir`).
    let baseDirectory: String
    /// Where damaged copies are written (tmpfs when there is one).
    let caseDirectory: String
    private var base: StoreBase?
    private var baseNumber = -1

    init(options: TortureOptions) {
        let name = options.encrypted ? "corrupt-store-sealed" : "corrupt-store"
        baseDirectory = options.directory.appending(name).string
        caseDirectory = (CorruptTorture.inMemoryRoot() ?? baseDirectory) + "-case"
    }

    /// Removes what the cases left.
    func finish() async {
        await Blocking.remove(baseDirectory)
        await Blocking.remove(caseDirectory)
    }

    /// Runs store case `index` (cycle `cycle` of the mode).
    mutating func run(case index: Int, cycle: Int, options: TortureOptions, report: inout TortureReport) async {
        let number = index / Self.casesPerBase
        if baseNumber != number || base == nil {
            do {
                base = try await StoreBase.make(
                    seed: options.seed, number: number, sealed: options.encrypted, directory: baseDirectory + "/base")
                baseNumber = number
            } catch {
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "making a store base (queue, spools, payload files) failed: \(error)")
                return
            }
        }
        let base = base!
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5354_4341_0000_0000 | UInt64(index))
        var tree = base.tree
        var expectations = StoreExpectations()
        var damages: [StoreDamage] = []
        if index % Self.casesPerBase != 0 {
            let kinds = StoreDamage.Kind.applicable(sealed: base.sealed)
            var drawn = [kinds[(index - number - 1) % kinds.count]]
            if random.next(below: 5) == 0 { drawn.append(kinds[random.next(below: kinds.count)]) }
            for kind in drawn {
                let damage = StoreDamage.draw(kind, base: base, tree: tree, &random)
                damage.apply(to: &tree, base: base, expectations: &expectations, &random)
                damages.append(damage)
            }
        }
        report.count(.corrupt) { $0.faults += damages.count }
        if damages.isEmpty { report.detail(.corrupt, "store: undamaged controls") }
        for damage in damages { report.detail(.corrupt, "store: " + damage.kind.rawValue) }
        let context = (base.sealed ? "sealed store: " : "store: ")
            + (damages.isEmpty ? "undamaged control" : damages.map(\.description).joined(separator: "; "))
        let root = caseDirectory + "/root"
        do { try await Blocking.run { [tree] in try tree.write(to: root) } } catch {
            report.violation(.corrupt, seed: options.seed, cycle: cycle, "cannot write the damaged store copy: \(error)")
            return
        }
        var configuration = StoreBase.configuration(sealed: base.sealed, seed: options.seed)
        configuration.log.createIfMissing = false
        let outcome = await Deadline.run(CorruptTorture.hangLimit) { [expectations, configuration] in
            await StoreOpenCheck.run(root: root, base: base, expectations: expectations, configuration: configuration)
        }
        switch outcome {
        case nil:
            report.violation(.corrupt, seed: options.seed, cycle: cycle, "\(context): the owner's open hung")
            await keep(tree, cycle: cycle, options: options, report: &report)
            return
        case .violation(let detail)?:
            report.violation(.corrupt, seed: options.seed, cycle: cycle, "\(context): \(detail)")
            await keep(tree, cycle: cycle, options: options, report: &report)
            return
        case .passed(let entries, let cut)?:
            report.count(.corrupt) {
                $0.cycles += 1
                $0.recovered += entries
            }
            if cut > 0 { report.detail(.corrupt, "store: spooled entries their damaged spool's own log no longer served", cut) }
        }
    }

    /// Keeps the damaged copy of a failing case for inspection.
    private func keep(_ tree: FileTree, cycle: Int, options: TortureOptions, report: inout TortureReport) async {
        let kept = options.directory.appending("corrupt-store-case-\(cycle)").string
        if (try? await Blocking.run { try tree.write(to: kept) }) != nil {
            report.notes.append("corrupt: the damaged store root of case \(cycle) is kept in \(kept)")
        }
    }
}
