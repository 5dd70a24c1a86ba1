import Crypto
import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage

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
final class SpoolIngestor: Sendable {
    let spools: FilePath
    let format: RecordFormat
    let key: SymmetricKey?
    let configuration: OutboxLog.Configuration
    let core: StoreCore
    let queue: OutboxLog
    /// Where entries this queue can never take are kept.
    let setAsideRecords: SetAsideRecords
    private let gate = SerialGate()
    /// A writer poked since the last look began (read before each claim).
    private let poked = Locked(false)

    init(
        spools: FilePath, format: RecordFormat, key: SymmetricKey?, configuration: OutboxLog.Configuration,
        core: StoreCore, queue: OutboxLog
    ) {
        self.spools = spools
        self.setAsideRecords = SetAsideRecords(queue: queue.directory, format: format, fileSystem: configuration.fileSystem)
        self.format = format
        self.key = key
        self.configuration = configuration
        self.core = core
        self.queue = queue
    }

    var wasPoked: Bool { poked.withLock { $0 } }

    func notePoke() { poked.withLock { $0 = true } }

    /// One look: every spool whose lock can be taken is moved in and deleted.
    ///
    /// - Throws: only when the queue itself failed (``OutboxError/Code/closed``
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
        let report = try await look()
        if !report.problems.isEmpty {
            configuration.logger.warning(
                "spooled entries were left in their spools", metadata: ["spools": "\(spools)", "report": "\(report)"])
        }
        return report
    }

    private func look() async throws(OutboxError) -> OutboxSpoolReport {
        let fileSystem = configuration.fileSystem
        let spools = self.spools
        var report = OutboxSpoolReport()
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
            return report
        }
        guard !ids.isEmpty else { return report }
        var opened: [OpenSpool] = []
        for id in ids {
            switch await SpoolReading.open(
                id, in: spools, queue: queue, format: format, key: key, configuration: configuration)
            {
            case .spool(let spool): opened.append(spool)
            case .busy: report.spoolsBusy += 1
            case .gone: break
            case .unusable(let problem): report.problems.append(problem)
            }
        }
        do throws(OutboxError) {
            let stopped = try await moveIn(&opened, report: &report)
            try await trim(opened, stopped: stopped, report: &report)
        } catch {
            for spool in opened {
                try? await spool.log.close()
                try? configuration.fileSystem.close(spool.guardLock)
            }
            throw error
        }
        return report
    }

    /// Moves the entries of `opened` in (``SpoolOrder``) and waits until the
    /// queue holds them durably. Returns the spools left with entries (the
    /// queue was full).
    private func moveIn(_ opened: inout [OpenSpool], report: inout OutboxSpoolReport) async throws(OutboxError) -> Set<SpoolID> {
        var order = SpoolOrder(opened.map(\.entries))
        var last: StoreAcknowledgement?
        var moved: [OutboxEntryID] = []
        var stopped: Set<SpoolID> = []
        func stop(at index: Int, _ entry: SpooledEntry, _ error: OutboxError) {
            report.problems.append(
                OutboxSpoolProblem(.refused, path: SpoolLayout.path(spools, entry.spool), record: entry.sequence, error: error))
            report.left += order.stop(index)
            stopped.insert(entry.spool)
        }
        while let next = order.next() {
            let (index, entry) = next
            do throws(OutboxError) {
                let (outcome, acknowledgement) = try await core.ingest(entry)
                last = acknowledgement
                order.consume(index)
                switch outcome {
                case .enqueued: report.ingested += 1
                case .duplicate: report.duplicates += 1
                case .quarantined: report.quarantined += 1
                }
                if outcome != .duplicate { moved.append(entry.body.id) }
                opened[index].marked = true
            } catch where Self.neverTaken(error) {
                // This queue can never take it as it was spooled: kept aside,
                // byte for byte, and the rest of its spool moves in.
                let kept: FilePath
                do throws(OutboxError) { kept = try await setAside(entry) } catch {
                    stop(at: index, entry, error)  // it could not be kept: it stays in its spool
                    continue
                }
                last = try await core.skip(entry)
                order.consume(index)
                opened[index].marked = true
                report.setAside += 1
                report.problems.append(OutboxSpoolProblem(.setAside, path: kept, record: entry.sequence, error: error))
            } catch where error.code != .storage && error.code != .closed {
                // The queue is full: keep it and what follows it in its
                // spool, in order, for a later look.
                stop(at: index, entry, error)
            }
        }
        // The log keeps a prefix of its batches: the last one durable, all are.
        try await core.wait(for: last, .durable)
        core.confirmIngested(moved)
        return stopped
    }

    /// Whether `error` refuses an entry for good, whatever the queue holds
    /// (as opposed to `.full`, which a later look may get past).
    private static func neverTaken(_ error: OutboxError) -> Bool {
        [.invalidArgument, .tooLarge, .corruptEntry].contains(error.code)
    }

    /// Keeps `entry`'s record in the queue's set-aside records; returns
    /// where. Blocking work, off the pool.
    private func setAside(_ entry: SpooledEntry) async throws(OutboxError) -> FilePath {
        let records = setAsideRecords
        return try await offThePool { () throws(OutboxError) -> FilePath in
            try records.keep(
                entry.stored, key: records.format.entryKey(entry.body.id),
                name: SetAsideRecords.name(spool: entry.spool, record: entry.sequence))
        }
    }

    /// Deletes every spool moved in entirely, then the queue's mark for it.
    private func trim(_ opened: [OpenSpool], stopped: Set<SpoolID>, report: inout OutboxSpoolReport) async throws(OutboxError) {
        var marks: [LogWrite] = []
        let fileSystem = configuration.fileSystem
        for spool in opened {
            // The guard goes last: with the spool if it is deleted, else released.
            var deleted = false
            defer {
                if deleted { try? fileSystem.removeFile(SpoolLayout.guardPath(spools, spool.id)) }
                try? fileSystem.close(spool.guardLock)
            }
            do { try await spool.log.close() } catch {
                report.problems.append(OutboxSpoolProblem(.notDeleted, path: SpoolLayout.path(spools, spool.id), error: .storage(error)))
                continue
            }
            if let damage = spool.damage {
                report.problems.append(damage)
                report.left += 1
                continue
            }
            guard !stopped.contains(spool.id) else { continue }
            do {
                try await OutboxLog.destroy(at: SpoolLayout.path(spools, spool.id), fileSystem: configuration.fileSystem)
            } catch {
                report.problems.append(OutboxSpoolProblem(.notDeleted, path: SpoolLayout.path(spools, spool.id), error: .storage(error)))
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

extension StoreCore.IngestOutcome: Equatable {}

extension SpoolIngestor {
    /// The ingestor of the queue in `directory`, opened with `configuration`.
    convenience init(
        queue directory: FilePath, format: RecordFormat, configuration: OutboxStoreConfiguration, core: StoreCore,
        log: OutboxLog
    ) {
        self.init(
            spools: SpoolLayout.directory(ofQueue: directory), format: format, key: configuration.encryptionKey,
            configuration: configuration.log, core: core, queue: log)
    }
}
