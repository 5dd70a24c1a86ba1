import OutboxLog
import SystemPackage
import OutboxModel

/// Moves the records of opened spools into the queue, in ``SpoolOrder``:
/// each entry admitted as a direct enqueue would be (``StoreCore/ingest(_:)``);
/// a record the queue can never take as it was spooled — unreadable, too
/// large for its limits, a value no enqueue accepts — kept aside
/// (``SetAsideRecords``) and skipped, so that it stops neither the store
/// nor the rest of its spool.
struct SpoolMover: Sendable {
    let core: StoreCore
    let setAside: SetAsideRecords

    /// The spools a move left with records.
    struct Moved {
        /// The queue stopped taking them (it was full, or a record could
        /// not be set aside): tried again at the next look.
        var stopped: Set<SpoolID> = []
        /// They stopped at an entry whose dependency the queue does not
        /// hold yet: tried again later in the same look.
        var deferred: Set<SpoolID> = []
    }

    /// Moves the records of `opened` in and waits until the queue holds them
    /// durably. With `deferringUnknownDependencies`, a spool stops at an
    /// entry a dependency of which the queue neither holds nor delivered
    /// (it may be in a spool of a later round); without, such an entry is
    /// recorded quarantined, as an enqueue with an unknown dependency from
    /// another process is.
    func moveIn(
        _ opened: inout [OpenSpool], deferringUnknownDependencies deferring: Bool, report: inout OutboxSpoolReport
    ) async throws(OutboxError) -> Moved {
        var order = SpoolOrder(opened.map(\.records))
        var last: StoreAcknowledgement?
        var result = Moved()
        func stop(at index: Int, _ record: SpooledRecord, _ error: OutboxError) {
            report.problems.append(OutboxSpoolProblem(.refused, path: opened[index].path, record: record.sequence, error: error))
            report.left += order.stop(index)
            result.stopped.insert(record.spool)
        }
        while let (index, record) = order.next() {
            let refusal: OutboxError
            switch record {
            case .unreadable(let unreadable):
                refusal = unreadable.error
            case .entry(let entry):
                if deferring, !(try await core.holdsAll(ofDependencies: entry.body.dependencies)) {
                    _ = order.stop(index)
                    result.deferred.insert(record.spool)
                    continue
                }
                do throws(OutboxError) {
                    let (outcome, acknowledgement) = try await core.ingest(entry)
                    last = acknowledgement
                    order.consume(index)
                    opened[index].marked = true
                    switch outcome {
                    case .enqueued: report.ingested += 1
                    case .duplicate: report.duplicates += 1
                    case .quarantined: report.quarantined += 1
                    }
                    continue
                } catch where Self.neverTaken(error) {
                    refusal = error
                } catch where error.code != .storage && error.code != .closed {
                    // The queue is full: keep it and what follows it in its
                    // spool, in order, for a later look.
                    stop(at: index, record, error)
                    continue
                }
            }
            // This queue can never take it as it was spooled: kept aside,
            // byte for byte, and the rest of its spool moves in.
            let kept: FilePath
            do throws(OutboxError) { kept = try await keep(record) } catch {
                stop(at: index, record, error)  // it could not be kept: it stays in its spool
                continue
            }
            last = try await core.skip(spool: record.spool, through: record.sequence)
            order.consume(index)
            opened[index].marked = true
            report.setAside += 1
            report.problems.append(OutboxSpoolProblem(.setAside, path: kept, record: record.sequence, error: refusal))
        }
        // The log keeps a prefix of its batches: the last one durable, all are.
        try await core.wait(for: last, .durable)
        return result
    }

    /// Whether `error` refuses an entry for good, whatever the queue holds
    /// (as opposed to `.full`, which a later look may get past).
    private static func neverTaken(_ error: OutboxError) -> Bool {
        [.invalidArgument, .tooLarge, .corruptEntry, .wrongKey].contains(error.code)
    }

    /// Keeps `record` in the queue's set-aside records; returns where.
    private func keep(_ record: SpooledRecord) async throws(OutboxError) -> FilePath {
        let records = setAside
        let (stored, key): ([UInt8], LogKey) =
            switch record {
            case .entry(let entry): (entry.stored, records.format.entryKey(entry.body.id))
            case .unreadable(let unreadable): (unreadable.stored, unreadable.key)
            }
        return try await offThePool { () throws(OutboxError) -> FilePath in
            try records.keep(stored, key: key, name: SetAsideRecords.name(spool: record.spool, record: record.sequence))
        }
    }
}
