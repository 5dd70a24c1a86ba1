import Outbox
import OutboxLog

extension StoreCheckpointFuzzing {
    /// A body loads into a fresh scheduler; encoded again from that
    /// scheduler it loads into the same state; that encoding is a fixed
    /// point up to record order; and the load's end does not trap.
    static func checkBody(_ body: [UInt8], nextSequence: UInt64, format: RecordFormat) throws(FuzzViolation) {
        var first = Scheduler(partition: partition, configuration: OutboxStoreConfiguration())
        do {
            _ = try StoreCheckpointBody.decode(body, into: &first, nextSequence: nextSequence, sealed: format.isSealed)
        } catch {
            return
        }
        let state = SchedulerSnapshot(first)
        guard state.nextSequence == max(nextSequence, 1) else {
            throw FuzzViolation("a body loaded with next sequence number \(nextSequence) leaves \(state.nextSequence)")
        }
        try checkHeldOnce(state)
        let encoded = StoreCheckpointBody.encode(first.checkpointContent, format: format)
        // The same records, perhaps in another order (names and completions
        // come out in dictionary order), so the same bytes sorted; a sealed
        // body's log keys are the keyed hashes of the ids when encoded, and
        // only authenticated, not checked, when read.
        guard encoded.count == body.count, format.isSealed || encoded.sorted() == body.sorted() else {
            throw FuzzViolation("a body of \(body.count) bytes that loaded is not what a store writes for what it loaded (\(encoded.count) bytes)")
        }
        var second = Scheduler(partition: partition, configuration: OutboxStoreConfiguration())
        let logKeys: StoreCheckpointBody.LogKeys
        do {
            logKeys = try StoreCheckpointBody.decode(
                encoded, into: &second, nextSequence: first.checkpointContent.nextSequence, sealed: format.isSealed)
        } catch {
            throw FuzzViolation("a body that loaded, encoded again, does not load: \(error)")
        }
        guard SchedulerSnapshot(second) == state else {
            throw FuzzViolation("a body that loaded, encoded again, loads differently:\n\(state)\nvs\n\(SchedulerSnapshot(second))")
        }
        if format.isSealed { try checkLogKeys(logKeys, of: state, format: format) }
        let third = StoreCheckpointBody.encode(second.checkpointContent, format: format)
        // Names and completions come out in dictionary order: the same
        // records, perhaps in another order, so the same bytes sorted.
        guard third.count == encoded.count, third.sorted() == encoded.sorted() else {
            throw FuzzViolation("encoding a loaded body is not a fixed point: \(encoded.count) bytes, then \(third.count)")
        }
        // What an open does next with what it loaded.
        var loaded = first
        _ = loaded.finishLoading(now: now, sequenceFloor: 0)
    }

    /// Each name has one id, and each app key one holder (an entry and its
    /// own completion count as one): a store never writes either twice.
    static func checkHeldOnce(_ state: SchedulerSnapshot) throws(FuzzViolation) {
        guard Set(state.names.values).count == state.names.count else { throw FuzzViolation("one name under two ids: \(state.names)") }
        var holders: [String: OutboxEntryID] = [:]
        let held = state.appKeys.map { ($0.key, $0.value) } + state.completions.compactMap { id, completion in
            completion.idempotencyKey.map { (id, $0) }
        }
        for (id, key) in held where holders.updateValue(id, forKey: key).map({ $0 != id }) ?? false {
            throw FuzzViolation("the app key \(key.debugDescription) is held by two entries")
        }
    }

    /// A sealed queue's encoding stores each entry and completion under the
    /// keyed hash of its id.
    static func checkLogKeys(_ keys: StoreCheckpointBody.LogKeys, of state: SchedulerSnapshot, format: RecordFormat) throws(FuzzViolation) {
        var entries: [[UInt8]: OutboxEntryID] = [:]
        for id in state.entries.keys { entries[Array(format.entryKey(id).bytes.dropFirst())] = id }
        var completions: [[UInt8]: OutboxEntryID] = [:]
        for id in state.completions.keys { completions[Array(format.completionKey(id).bytes.dropFirst())] = id }
        guard keys.entries == entries, keys.completions == completions else {
            throw FuzzViolation("a sealed body encoded again does not carry its records' log keys")
        }
    }
}

/// What a checkpoint loads into a scheduler, comparable whatever the order
/// it was loaded in. The app key's holder (``Scheduler/keyHolders``) is
/// left out: two entries a checkpoint gives one app key (which no store
/// writes) leave it to whichever loads last.
struct SchedulerSnapshot: Equatable, CustomStringConvertible {
    var entries: [OutboxEntryID: EntryMetadata]
    var failures: [OutboxEntryID: FailureInfo]
    var completions: [OutboxEntryID: Completion]
    var names: [UInt32: String] = [:]
    var pristine: Set<OutboxEntryID>
    var appKeys: [OutboxEntryID: String]
    var nextSequence: UInt64

    init(_ scheduler: Scheduler) {
        failures = scheduler.failures
        completions = scheduler.completions
        pristine = scheduler.pristine
        appKeys = scheduler.appKeys
        nextSequence = scheduler.nextSequence
        var entries: [OutboxEntryID: EntryMetadata] = [:]
        scheduler.entries.forEach { entries[$0.id] = $0 }
        self.entries = entries
        for (id, name) in scheduler.strings.all { names[id] = name }
    }

    var description: String {
        "\(entries.count) entries \(entries.values.sorted { $0.sequence < $1.sequence }), failures \(failures), "
            + "completions \(completions), names \(names), pristine \(pristine), app keys \(appKeys), next \(nextSequence)"
    }
}
