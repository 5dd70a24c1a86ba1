import Crypto
import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage
import OutboxModel

/// The owner's side of the spools of one queue: moves spooled entries into
/// the queue exactly once, then deletes the spools.
///
/// The commit point is the queue's batch: each entry goes in with the
/// spool's mark (``SpoolMark``) in the same atomic log batch, and a spool
/// is deleted only after the last of those batches is durable. A crash of
/// the owner before that batch reached the disk leaves the entry in the
/// spool and unmarked: it is moved in again, once. A crash after it leaves
/// the entry in the queue and marked: it is skipped. A crash of a writer
/// leaves its spool unlocked, with the records its log recovers. Looks
/// are serialized: one at a time per store.
///
/// A look takes the queue's own spools and, for a sealed queue, those
/// written under its plain name (``SpoolSource``); a re-key adds the old
/// key's.
final class SpoolIngestor: Sendable {
    /// The queue's own spools' directory (where writers poke).
    let spools: FilePath
    let format: RecordFormat
    let configuration: OutboxLog.Configuration
    let core: StoreCore
    let queue: OutboxLog
    private let mover: SpoolMover
    var setAsideRecords: SetAsideRecords { mover.setAside }
    /// Where to look besides the queue's own spools (blocking: run off the pool).
    private let otherSources: @Sendable () -> [SpoolSource]
    private let ownSource: SpoolSource
    private let round: SpoolRound
    private let gate = SerialGate()
    /// A writer poked since the last look began (read before each claim).
    private let poked = Locked(false)

    init(
        queue log: OutboxLog, format: RecordFormat, key: SymmetricKey?, configuration: OutboxLog.Configuration,
        core: StoreCore, round: SpoolRound, otherSources: @escaping @Sendable () -> [SpoolSource]
    ) {
        self.round = round
        ownSource = SpoolSource.own(queue: log.directory, format: format, key: key)
        spools = ownSource.directory
        self.format = format
        self.configuration = configuration
        self.core = core
        queue = log
        self.otherSources = otherSources
        mover = SpoolMover(
            core: core, setAside: SetAsideRecords(queue: log.directory, format: format, fileSystem: configuration.fileSystem))
    }

    var wasPoked: Bool { poked.withLock { $0 } }

    func notePoke() { poked.withLock { $0 = true } }

    /// One look: every spool whose lock can be taken is moved in and deleted.
    ///
    /// - Throws: only when the queue itself failed (``/OutboxModel/OutboxError/Code/closed``
    ///   or a storage error; the store is then closed to further work).
    ///   Problems with a spool are in the report; the spool is kept.
    func ingest() async throws(OutboxError) -> OutboxSpoolReport {
        // A read-only open changes nothing: the spools wait for a writer.
        guard !configuration.readOnly else { return OutboxSpoolReport() }
        await gate.enter()
        defer { gate.leave() }
        // A closed (or failed) store refuses, spools or not: a watch ends there.
        try core.state.withLock { state throws(OutboxError) in try core.check(state) }
        poked.withLock { $0 = false }
        let others = otherSources
        let sources = [ownSource] + ((try? await offThePool { () throws(OutboxError) in others() }) ?? [])
        var report = OutboxSpoolReport()
        for source in sources { try await look(at: source, report: &report) }
        if !report.problems.isEmpty {
            configuration.logger.warning(
                "spooled entries were left in their spools or set aside",
                metadata: ["spools": "\(spools)", "report": "\(report)"])
        }
        return report
    }

    private func look(at source: SpoolSource, report: inout OutboxSpoolReport) async throws(OutboxError) {
        let fileSystem = configuration.fileSystem
        let spools = source.directory
        let ids: [SpoolID]
        do {
            ids = try await offThePool { () throws(OutboxError) -> [SpoolID] in
                _ = SpoolPoke.take(spools, fileSystem: fileSystem)
                // Guards whose spool is gone (the owner died between the two deletions).
                for id in SpoolLayout.orphanGuards(spools, fileSystem: fileSystem) {
                    guard let orphan = try? SpoolLayout.takeGuard(spools, id, fileSystem: fileSystem) else { continue }
                    try? fileSystem.removeFile(SpoolLayout.guardPath(spools, id))
                    try? fileSystem.close(orphan)
                }
                return try SpoolLayout.list(spools, fileSystem: fileSystem)
            }
        } catch {
            report.problems.append(OutboxSpoolProblem(.listing, path: spools, error: error))
            return
        }
        guard !ids.isEmpty else {
            // A queue's former spools' directory, emptied: nothing is to come there.
            if !source.inQueueFormat { try? await SpoolLayout.purge(spools: spools, fileSystem: fileSystem) }
            return
        }
        // First every spool, oldest first, a round at a time; an entry whose
        // dependency the queue does not hold yet may find it in a later
        // round, so its spool waits (from that entry on) for a last pass,
        // where an unknown dependency is final.
        var rest = ids[...]
        var deferred: [SpoolID] = []
        while !rest.isEmpty {
            deferred += try await moveInRound(of: &rest, from: source, deferring: true, report: &report)
        }
        var last = deferred[...]
        while !last.isEmpty { _ = try await moveInRound(of: &last, from: source, deferring: false, report: &report) }
    }

    /// Opens and reads spools from the front of `ids` until a round is
    /// full, moves them in and deletes those moved in entirely. Returns the
    /// spools that wait for a dependency (`deferring`: see ``SpoolMover``).
    private func moveInRound(
        of ids: inout ArraySlice<SpoolID>, from source: SpoolSource, deferring: Bool, report: inout OutboxSpoolReport
    ) async throws(OutboxError) -> [SpoolID] {
        var opened: [OpenSpool] = []
        var records = 0
        while let id = ids.first, records < round.records, opened.count < round.spools {
            ids.removeFirst()
            switch await SpoolReading.open(id, in: source, queue: queue, queueFormat: format, configuration: configuration) {
            case .spool(let spool):
                opened.append(spool)
                records += spool.records.count
            case .busy: report.spoolsBusy += 1
            case .gone: break
            case .unusable(let problem): report.problems.append(problem)
            }
        }
        let moved: SpoolMover.Moved
        do throws(OutboxError) {
            moved = try await mover.moveIn(&opened, deferringUnknownDependencies: deferring, report: &report)
        } catch {
            for spool in opened { try? configuration.fileSystem.close(spool.guardLock) }
            throw error
        }
        // Releases every guard, whatever happens.
        try await trim(opened, keeping: moved.stopped.union(moved.deferred), report: &report)
        return opened.map(\.id).filter(moved.deferred.contains)
    }

    /// Deletes every spool moved in entirely, then the queue's mark for it;
    /// releases the guards of all of them (of those `keeping`, the spool
    /// stays).
    private func trim(_ opened: [OpenSpool], keeping stopped: Set<SpoolID>, report: inout OutboxSpoolReport) async throws(OutboxError) {
        var marks: [LogWrite] = []
        let fileSystem = configuration.fileSystem
        for spool in opened {
            // The guard goes last: with the spool if it is deleted, else released.
            var deleted = false
            defer {
                if deleted { try? fileSystem.removeFile(SpoolLayout.guardPath(spool.source.directory, spool.id)) }
                try? fileSystem.close(spool.guardLock)
            }
            guard !stopped.contains(spool.id) else { continue }
            do { try await OutboxLog.destroy(at: spool.path, fileSystem: fileSystem) } catch {
                report.problems.append(OutboxSpoolProblem(.notDeleted, path: spool.path, error: .storage(error)))
                continue
            }
            report.spoolsDeleted += 1
            deleted = true
            if spool.marked { marks.append(.tombstone(SpoolMark.key(spool.id))) }
        }
        // Deleted spools are never written again (a writer draws a new name
        // each time): their marks are no longer needed. Losing these
        // tombstones to a crash leaves a few bytes, nothing else.
        guard !marks.isEmpty else { return }
        do { _ = try await queue.append(marks, durability: .buffered) } catch {
            core.fail(.storage(error))
            throw .storage(error)
        }
    }
}

/// How much of its spools a look holds at once. Spools are moved in a round
/// at a time, oldest first (their names begin with their creation time):
/// at most `records` records (or the first spool, if it alone holds more)
/// and `spools` spools in memory, so a look at a million spooled entries,
/// or at thousands of spools, holds a round's worth of records and guards.
package struct SpoolRound: Sendable {
    package var records = 65_536
    package var spools = 256
    package init() {}
}
