import OutboxModel
/// Several enqueues all or nothing (a transaction), at the cost of what the
/// batch touches.
///
/// Only two checks of ``Scheduler/enqueue(_:storedBytes:now:)`` can refuse
/// a request that ``Admission`` accepted: an unknown dependency, and a full
/// partition; both come before the enqueue changes anything. So the batch
/// is first *previewed* — every request is checked against the state the
/// requests before it would leave, kept in a small overlay (``BatchPreview``)
/// instead of a copy of the scheduler — and only a batch that fits is
/// applied, request by request, to the scheduler itself. A refusal is
/// found before anything changes: the batch costs time in proportion to
/// its own size, not the queue's (copying the scheduler made a transaction
/// O(queue size), holding the store's lock while a million entries were
/// copied).
///
/// One case is not previewed: a batch that would need quarantined entries evicted
/// (`fullPolicy = .evictOldestQuarantined` with the partition full). Eviction
/// cascades quarantines through dependents and already costs a scan of the
/// queue per enqueue; that batch runs on a copy, as before.
/// `TransactionEquivalenceTests` checks both paths against running the
/// batch on a copy, on random queues and batches.
extension Scheduler {
    mutating func enqueueAll(
        _ requests: [OutboxEnqueueRequest], storedBytes: [Int], now: Int64
    ) throws(BatchFailure) -> [(EnqueueOutcome, StoreChanges)] {
        if try needsEviction(requests, storedBytes: storedBytes) {
            var trial = self
            var results: [(EnqueueOutcome, StoreChanges)] = []
            for (request, bytes) in zip(requests, storedBytes) {
                do { results.append(try trial.enqueue(request, storedBytes: bytes, now: now)) } catch { throw .refused(error) }
            }
            self = trial
            return results
        }
        var results: [(EnqueueOutcome, StoreChanges)] = []
        results.reserveCapacity(requests.count)
        for (request, bytes) in zip(requests, storedBytes) {
            // The preview admitted every request: a refusal here would be a
            // preview that disagrees with `enqueue`, and the requests before
            // it are already in memory (never on disk).
            do { results.append(try enqueue(request, storedBytes: bytes, now: now)) } catch { throw .inconsistent(error) }
        }
        return results
    }

    /// Previews the batch: throws the first refusal, or tells whether the
    /// batch needs quarantined entries evicted. The preview holds a copy of the
    /// scheduler, which must be gone before the batch is applied: while two
    /// values share the scheduler's storage, the first change would copy
    /// all of it (the cost this extension exists to avoid). Hence a
    /// function of its own, whose preview ends when it returns.
    private func needsEviction(_ requests: [OutboxEnqueueRequest], storedBytes: [Int]) throws(BatchFailure) -> Bool {
        var preview = BatchPreview(self)
        for (request, bytes) in zip(requests, storedBytes) {
            switch preview.admit(request, storedBytes: bytes) {
            case .admitted: continue
            case .refused(let error): throw .refused(error)
            case .needsEviction: return true
            }
        }
        return false
    }

    /// Why ``enqueueAll(_:storedBytes:now:)`` did not enqueue the batch.
    enum BatchFailure: Error {
        /// A request was refused; nothing changed.
        case refused(OutboxError)
        /// The preview admitted a request that `enqueue` then refused: the
        /// requests before it changed memory (nothing reached storage).
        /// The store must refuse every call until a reopen rebuilds memory.
        case inconsistent(OutboxError)
    }
}

/// The state a batch's earlier requests would leave, as far as the checks
/// of its later ones can see it: which ids and app keys they added or
/// removed, which entries they made parents, who holds each coalescing key
/// they used, and the partition's count and bytes. It reads the scheduler
/// and never writes it.
struct BatchPreview {
    enum Verdict {
        case admitted
        case refused(OutboxError)
        /// The partition would be full: quarantined entries would be evicted.
        case needsEviction
    }

    /// A request of the batch, admitted.
    private struct Added {
        var storedBytes: Int
        var appKey: String?
        /// Quarantined at its enqueue (a quarantined parent).
        var quarantined: Bool
        /// The live entries it depends on: it counts among their dependents.
        var parents: [OutboxEntryID]
    }

    private let scheduler: Scheduler
    private var added: [OutboxEntryID: Added] = [:]
    /// Entries of the queue (not of the batch) that a request replaced.
    private var removed: Set<OutboxEntryID> = []
    /// App keys the batch took (or gave up: `nil`).
    private var keys: [String: OutboxEntryID?] = [:]
    /// Coalescing keys the batch used: the key's holder after it (`nil`:
    /// its newest entry is not pristine).
    private var holders: [String: OutboxEntryID?] = [:]
    /// How many requests of the batch (still in it) depend on each entry.
    private var children: [OutboxEntryID: Int] = [:]
    private var count: Int
    private var size: Int

    init(_ scheduler: Scheduler) {
        self.scheduler = scheduler
        count = scheduler.entries.count
        size = scheduler.totalBytes
    }

    /// Checks `request` as ``Scheduler/enqueue(_:storedBytes:now:)`` would
    /// after the requests before it, in the same order, and if it passes,
    /// notes what it changes.
    mutating func admit(_ request: OutboxEnqueueRequest, storedBytes: Int) -> Verdict {
        if isDuplicate(request.id) { return .admitted }
        if let key = request.idempotencyKey, let holder = holder(ofAppKey: key), isDuplicate(holder) { return .admitted }
        for parent in request.dependencies where !isLive(parent) && scheduler.completion(parent) == nil {
            return .refused(
                OutboxError(.unknownDependency, "depends on \(parent), which this partition does not know", entry: request.id))
        }
        let replaced = replaceable(by: request)
        let newCount = count + 1 - (replaced == nil ? 0 : 1)
        let newSize = size + storedBytes - (replaced?.storedBytes ?? 0)
        let limits = scheduler.configuration
        let fits = (limits.maximumEntries.map { newCount <= $0 } ?? true) && (limits.maximumBytes.map { newSize <= $0 } ?? true)
        guard fits else {
            if limits.fullPolicy == .evictOldestQuarantined { return .needsEviction }
            return .refused(
                OutboxError(
                    .full,
                    "the partition holds \(count) entries and \(size) bytes; limits are "
                        + "\(limits.maximumEntries.map(String.init) ?? "none") entries and "
                        + "\(limits.maximumBytes.map(String.init) ?? "none") bytes"))
        }
        if let replaced { remove(replaced.id) }
        let quarantined = hasFailedDependency(request)
        let parents = request.dependencies.filter(isLive)
        added[request.id] = Added(
            storedBytes: Int(UInt32(clamping: storedBytes)), appKey: request.idempotencyKey, quarantined: quarantined, parents: parents)
        if let key = request.idempotencyKey { keys[key] = .some(request.id) }
        if let key = request.coalescingKey { holders[key] = .some(quarantined ? nil : request.id) }
        for parent in parents { children[parent, default: 0] += 1 }
        count = newCount
        size = newSize
        return .admitted
    }

    // MARK: What the batch has done so far

    private func isLive(_ id: OutboxEntryID) -> Bool {
        added[id] != nil || (scheduler.metadata(id) != nil && !removed.contains(id))
    }

    /// Enqueueing `id` again answers `duplicate`.
    private func isDuplicate(_ id: OutboxEntryID) -> Bool { isLive(id) || scheduler.completion(id) != nil }

    private func holder(ofAppKey key: String) -> OutboxEntryID? {
        if let taken = keys[key] { return taken }
        return scheduler.keyHolders[key]
    }

    /// The pending, never attempted entry a coalescing `request` replaces, if any.
    private func replaceable(by request: OutboxEnqueueRequest) -> (id: OutboxEntryID, storedBytes: Int)? {
        guard let key = request.coalescingKey else { return nil }
        let holder: OutboxEntryID?
        if let used = holders[key] {
            holder = used
        } else {
            holder = scheduler.strings.lookup(key).flatMap { scheduler.holder(of: $0) }
        }
        guard let holder, !hasDependents(holder), !request.dependencies.contains(holder) else { return nil }
        if let batch = added[holder] { return batch.quarantined ? nil : (holder, batch.storedBytes) }
        guard let entry = scheduler.metadata(holder), !removed.contains(holder), entry.status == .pending, entry.attempts == 0
        else { return nil }
        return (holder, Int(entry.storedBytes))
    }

    /// Whether a live entry depends on `id`: one of the queue's (not
    /// replaced by the batch), or one of the batch's.
    private func hasDependents(_ id: OutboxEntryID) -> Bool {
        children[id, default: 0] > 0 || scheduler.dependents(of: id).contains { !removed.contains($0) }
    }

    /// A replaced entry leaves: its id, its app key (unless its completion
    /// keeps it: it has none, it was pending), its place among its parents'
    /// dependents.
    private mutating func remove(_ id: OutboxEntryID) {
        let appKey = added[id]?.appKey ?? scheduler.appKeys[id]
        if let batch = added.removeValue(forKey: id) {
            for parent in batch.parents { children[parent, default: 0] -= 1 }
        } else {
            removed.insert(id)
        }
        if let appKey, holder(ofAppKey: appKey) == id { keys[appKey] = .some(nil) }
    }

    /// Whether a dependency of `request` is quarantined (the new entry is then
    /// quarantined at once).
    private func hasFailedDependency(_ request: OutboxEnqueueRequest) -> Bool {
        request.dependencies.contains { parent in
            guard scheduler.completion(parent) == nil else { return false }
            if let batch = added[parent] { return batch.quarantined }
            guard let entry = scheduler.metadata(parent), !removed.contains(parent) else { return true }
            return entry.status == .quarantined
        }
    }
}
