import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// Corruption fuzzing on copies of real logs.
///
/// Real logs are made by running workloads on a real directory (some closed
/// cleanly, some copied while open, as `kill -9` leaves them); each case
/// damages a copy — bit flips, a truncation, a zeroed 4 KiB page, garbage
/// appended (random, zeros, or a replayed record that verifies), a deleted
/// or duplicated segment, a header from another log — and opens it, strict
/// and then salvage. Every open must return (never crash or hang), either
/// recovering with a report or failing with a typed `OutboxLogError`; and a
/// log that opens must never return a key, value or annotation whose bytes
/// no step wrote, nor a key twice, nor disagree between a scan and `get`.
/// A log that opened must open again, strict, with the same contents.
///
/// The logs keep index checkpoints (`INDEX`), which the damages hit too.
/// A strict open trusts a checkpoint that describes the log, so damage in
/// a segment it covers is found when the damaged record is read — the
/// read throws `.corruption` (or, after the first, `.poisoned`) with the
/// file and offset — not by the open: counted as a refusal, like an open
/// that fails. Never accepted: a value no step wrote, a crash or a hang.
///
/// One cycle in ``StoreCorruption/every`` is a store case instead: damage
/// to the outbox store's own files beside its log (its checkpoint, its
/// spools, its payload files) in a copy of a real queue, held to the rule
/// that a bad file is set aside, never fatal to the store (``StoreOpenCheck``).
enum CorruptTorture {
    /// Cases per base log before a new one is made.
    static let casesPerBase = 50
    /// An open still running after this long counts as hung.
    static let hangLimit: Duration = .seconds(60)

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        if options.encrypted { return await runSealed(options: options, budget: budget, report: &report) }
        let root = options.directory.appending("corrupt").string
        let memory = inMemoryRoot()
        let caseDirectory = (memory ?? root) + "/case"
        if let memory { report.notes.append("corrupt: damaged copies are opened from tmpfs (\(memory)); base logs made in \(root)") }
        var bases: [Int: BaseLog] = [:]
        var store = StoreCorruption(options: options)
        for cycle in budget.cycles {
            if StoreCorruption.isStoreCase(cycle) {
                await store.run(case: StoreCorruption.index(ofCycle: cycle), cycle: cycle, options: options, report: &report)
                continue
            }
            let number = cycle / casesPerBase
            // A foreign header comes from another real log: the previous base.
            let foreignNumber = number == 0 ? 1 : number - 1
            for needed in [number, foreignNumber] where bases[needed] == nil {
                do {
                    bases[needed] = try await BaseLog.make(seed: options.seed, number: needed, directory: root + "/base")
                } catch {
                    report.violation(.corrupt, seed: options.seed, cycle: cycle, "making base log \(needed) failed: \(error)")
                    return
                }
            }
            bases = bases.filter { $0.key == number || $0.key == foreignNumber || $0.key == number + 1 }
            let base = bases[number]!
            let foreign = bases[foreignNumber]!
            await self.case(cycle, base: base, foreign: foreign, directory: caseDirectory, options: options, report: &report)
            if cycle % 500 == 0 {
                let counts = report[.corrupt]
                options.progress("corrupt: case \(cycle), \(counts.faults) damages, \(counts.violations) violations")
            }
        }
        await Blocking.remove(root)
        if let memory { await Blocking.remove(memory) }
        await store.finish()
    }

    /// `--encrypted`: the damages on copies of sealed queues
    /// (``SealedStoreCorruption``), a new base every ``casesPerBase`` cases.
    static func runSealed(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        let root = options.directory.appending("corrupt-sealed").string
        let caseRoot = (inMemoryRoot() ?? root) + "-case"
        var base: SealedStoreCorruption.Base?
        var store = StoreCorruption(options: options)
        for cycle in budget.cycles {
            if StoreCorruption.isStoreCase(cycle) {
                await store.run(case: StoreCorruption.index(ofCycle: cycle), cycle: cycle, options: options, report: &report)
                continue
            }
            if base == nil || cycle % casesPerBase == 0 {
                do {
                    base = try await SealedStoreCorruption.makeBase(options, number: cycle / casesPerBase, root: root + "/base")
                } catch {
                    report.violation(.corrupt, seed: options.seed, cycle: cycle, "making a sealed base queue failed: \(error)")
                    return
                }
            }
            await SealedStoreCorruption.case(cycle, base: base!, root: caseRoot, options: options, report: &report)
            if cycle % 200 == 0 {
                let counts = report[.corrupt]
                options.progress("corrupt (sealed): case \(cycle), \(counts.faults) damages, \(counts.violations) violations")
            }
        }
        await Blocking.remove(root)
        await Blocking.remove(caseRoot)
        await store.finish()
    }

    /// Where the damaged copies go: memory (`/dev/shm`) when the machine
    /// has it. The damage is under test, not the medium, and a case then
    /// spends no time in real syncs — several times as many cases a minute.
    /// The real logs they are copies of are made under `--dir`.
    static func inMemoryRoot() -> String? {
        let shm = "/dev/shm"
        guard FileManager.default.isWritableFile(atPath: shm) else { return nil }
        return shm + "/outbox-torture-corrupt-\(UUID().uuidString)"
    }

    static func `case`(
        _ cycle: Int, base: BaseLog, foreign: BaseLog, directory: String, options: TortureOptions,
        report: inout TortureReport
    ) async {
        var random = SplitMix64.derived(seed: options.seed, stream: 0x434F_5252_0000_0000 | UInt64(cycle))
        var files = base.files
        var damages: [Damage] = []
        // The first case of each base is undamaged: a control that proves
        // the harness reads a healthy log back exactly.
        if cycle % casesPerBase == 0 {
            await control(cycle, base: base, directory: directory, options: options, report: &report)
            return
        }
        // Usually one damage; sometimes several at once.
        for _ in 0..<(random.next(below: 5) == 0 ? 2 + random.next(below: 2) : 1) {
            guard let damage = Damage.draw(files: files, foreign: foreign.files, &random) else { break }
            damage.apply(to: &files, foreign: foreign.files, &random)
            damages.append(damage)
        }
        report.count(.corrupt) { $0.faults += damages.count }
        for damage in damages { report.detail(.corrupt, damage.kind) }
        let context = damages.map(\.description).joined(separator: "; ") + (base.crashImage ? " (crash image)" : "")

        for mode in [OutboxLog.Configuration.RecoveryMode.strict, .salvage] {
            do {
                try await BaseLog.write(files, to: directory)
            } catch {
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "cannot write the damaged copy: \(error)")
                return
            }
            let outcome = await Deadline.run(hangLimit) {
                await openAndCheck(FilePath(directory), mode: mode, base: base)
            }
            switch outcome {
            case nil:
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "\(context): the \(mode) open hung")
                await keep(files, cycle: cycle, options: options, report: &report)
                return
            case .refused(let code)?:
                report.detail(.corrupt, "\(mode) opens refused (\(code))")
            case .opened(let records)?:
                report.detail(.corrupt, "\(mode) opens recovered")
                report.count(.corrupt) { $0.recovered += records }
            case .violation(let detail)?:
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "\(context): \(mode) open: \(detail)")
                await keep(files, cycle: cycle, options: options, report: &report)
                return
            }
        }
        report.count(.corrupt) { $0.cycles += 1 }
    }

    /// Keeps the damaged copy of a failing case for inspection.
    static func keep(_ files: [String: [UInt8]], cycle: Int, options: TortureOptions, report: inout TortureReport) async {
        let kept = options.directory.appending("corrupt-case-\(cycle)")
        if (try? await BaseLog.write(files, to: kept.string)) != nil {
            report.notes.append("corrupt: the damaged log of case \(cycle) is kept in \(kept)")
        }
    }

    /// An undamaged copy must open strict, clean, with exactly the base's state.
    static func control(
        _ cycle: Int, base: BaseLog, directory: String, options: TortureOptions, report: inout TortureReport
    ) async {
        func violation(_ detail: String) {
            report.violation(.corrupt, seed: options.seed, cycle: cycle, "undamaged copy\(base.crashImage ? " (crash image)" : ""): \(detail)")
        }
        do {
            try await BaseLog.write(base.files, to: directory)
            let log = try await OutboxLog.open(at: FilePath(directory), configuration: TortureLogConfiguration.make())
            let reading = try await LogContents.read(log)
            try await log.close()
            if let problem = reading.problems.first { return violation(problem) }
            if reading.state != base.state {
                return violation("holds different contents than written (keys \(reading.state.differences(from: base.state).prefix(4)))")
            }
            report.count(.corrupt) {
                $0.cycles += 1
                $0.recovered += reading.state.entries.count
            }
            report.detail(.corrupt, "undamaged controls")
        } catch {
            violation("\(error)")
        }
    }

    enum Outcome: Sendable {
        /// Failed with a typed error, this code.
        case refused(String)
        /// Opened; this many live keys were read back and checked.
        case opened(Int)
        case violation(String)
    }

    static func openAndCheck(_ directory: FilePath, mode: OutboxLog.Configuration.RecoveryMode, base: BaseLog) async -> Outcome {
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make(recovery: mode))
        } catch {
            // Typed by construction (`throws(OutboxLogError)`); what matters
            // is that it returned, and with a reason.
            return .refused(WorkerLine.word(error.code))
        }
        let first: StateModel
        do {
            let reading = try await LogContents.read(log)
            try await log.close()
            if let problem = reading.problems.first { return .violation(problem) }
            if let invented = base.invented(in: reading.state) { return .violation(invented) }
            first = reading.state
        } catch let error as OutboxLogError where error.code == .corruption || error.code == .poisoned {
            // Damage in a segment a checkpoint covers: reported when read.
            try? await log.close()
            return .refused(WorkerLine.word(error.code) + " when read")
        } catch {
            try? await log.close()
            return .violation("the log opened but reading it failed: \(error)")
        }
        // Whatever the open repaired, it repaired for good.
        do {
            let again = try await OutboxLog.open(at: directory, configuration: TortureLogConfiguration.make())
            let reading = try await LogContents.read(again)
            try await again.close()
            if reading.state != first {
                return .violation(
                    "reopened strict, it holds different contents (keys \(reading.state.differences(from: first).prefix(4)))")
            }
        } catch {
            return .violation("after the \(mode) open succeeded, a strict reopen failed: \(error)")
        }
        return .opened(first.entries.count)
    }
}
