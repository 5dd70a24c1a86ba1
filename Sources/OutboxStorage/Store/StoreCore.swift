import Foundation
import OutboxLog
import OutboxLocking
import OutboxModel

/// The behaviour every store shares: the scheduler behind one lock, and the
/// rule that a change is handed to storage *under* that lock (so storage
/// sees changes in the order the scheduler made them) and awaited after it.
///
/// If storage ever fails after the scheduler changed, memory and disk may
/// disagree: the store then refuses every call (``/OutboxModel/OutboxError/Code/closed``)
/// until it is reopened, which rebuilds memory from disk. Bad input never
/// gets that far: ``Admission`` refuses it first.
///
/// Nothing is handed out for sending (``claimDue(at:limit:lease:accepting:)``,
/// ``beginAttempt(_:at:lease:)``) before the entry's own enqueue has reached
/// `enqueueDurability`: the server must never apply a write whose enqueue
/// may still fail, or be undone by a power loss.
final class StoreCore: Sendable {
    let partition: String
    let configuration: OutboxStoreConfiguration
    let backend: any StoreBackend
    /// Announces the entries each change touched, once it is acknowledged.
    let feed = OutboxChangeFeed()

    struct State {
        var scheduler: Scheduler
        var failure: OutboxError?
        var closed = false
        /// The newest batch that recorded new entries (an enqueue, a
        /// spooled entry moved in, one admitted while loading), until it is
        /// seen to have reached `enqueueDurability`. Storage keeps batches in
        /// order, so every earlier enqueue has reached it then too: a claim
        /// needs no per-entry record of which enqueues are still on their way.
        var newestEnqueue: StoreAcknowledgement?
        /// Set until a load in the background has installed the scheduler
        /// (`StoreCore+Loading.swift`).
        var loading: StoreLoading?
        /// Checkpoints (`StoreCore+Checkpoint.swift`).
        var checkpoints = StoreCheckpointing()
        /// How the scheduler was loaded (for tests and diagnostics).
        var loadedFrom: LoadSource = .everyEntry
    }

    let state: Locked<State>

    enum LoadSource: Sendable, Hashable {
        /// Every entry's body and state, read from the log.
        case everyEntry
        /// The store checkpoint and the entries changed after it.
        case checkpoint
    }

    /// How the scheduler was loaded (after the load: ``waitUntilLoaded()``).
    var loadedFrom: LoadSource { state.withLock { $0.loadedFrom } }
    /// Why the configuration cannot be used, if it cannot: every call
    /// refuses with it (a store built without a throwing initializer).
    let configurationError: OutboxError?
    /// Whether the scheduler was loaded in the background (calls then wait
    /// for it: ``waitUntilLoaded()``).
    let loadsInBackground: Bool
    /// Where the store checkpoint goes, if the store keeps one.
    let checkpointFile: CheckpointFile?

    init(
        partition: String, configuration: OutboxStoreConfiguration, backend: any StoreBackend, scheduler: Scheduler,
        loading: StoreLoading? = nil, checkpointFile: CheckpointFile? = nil
    ) {
        self.partition = partition
        self.configuration = configuration
        self.backend = backend
        self.loadsInBackground = loading != nil
        self.checkpointFile = checkpointFile
        var initial = State(scheduler: scheduler)
        initial.loading = loading
        self.state = Locked(initial)
        do { try Admission.check(configuration) } catch { configurationError = error; return }
        configurationError = nil
    }

    /// Durability a claim waits for: the attempt's, or the enqueue's while
    /// an enqueue may not have reached it yet (then the claim's own batch,
    /// written after every enqueue, is waited for at the stronger level:
    /// nothing goes out before its enqueue has the durability promised).
    func durabilityForSending(_ state: inout State) -> Durability {
        if let newest = state.newestEnqueue {
            guard newest.hasReached(configuration.enqueueDurability) else {
                return Self.stronger(configuration.attemptDurability, configuration.enqueueDurability)
            }
            state.newestEnqueue = nil
        }
        return configuration.attemptDurability
    }

    static func stronger(_ a: Durability, _ b: Durability) -> Durability {
        let order: [Durability] = [.buffered, .written, .durable]
        return order.firstIndex(of: a)! >= order.firstIndex(of: b)! ? a : b
    }

    // MARK: Running changes

    /// Runs `change` on the scheduler; persists what it returns; waits for
    /// `durability`.
    func perform<Result>(
        _ durability: Durability, newBody: PreparedBody? = nil,
        _ change: (inout Scheduler) throws(OutboxError) -> (Result, StoreChanges)
    ) async throws(OutboxError) -> Result {
        let (result, acknowledgement) = try await submit(newBodies: newBody.map { [$0] } ?? [], change)
        if try !reachedWithoutWaiting(acknowledgement, durability) { try await wait(for: acknowledgement, durability) }
        return result
    }

    /// The first half of ``perform(_:newBody:_:)``: runs `change` and hands
    /// its changes to storage, under the lock, without waiting. Still under
    /// the lock, `whileLocked` then sees the result and the acknowledgement
    /// if changes were handed over, and `unchanged` the result if there were
    /// none.
    ///
    /// Room in storage for the change is reserved under the lock, just
    /// before it, when storage has it now: the common case, with no
    /// suspension. Otherwise (storage is behind, or the store is
    /// still loading) it is waited for outside the lock first, and the
    /// change runs then: storage never refuses a change already made in
    /// memory because too much waits to be written. (`reservedRoom`: room
    /// the caller reserved already.)
    func submit<Result>(
        newBodies: [PreparedBody] = [], reservedRoom: StoreRoom? = nil,
        _ change: (inout Scheduler) throws(OutboxError) -> (Result, StoreChanges),
        whileLocked: (inout State, Result, StoreAcknowledgement) -> Void = { _, _, _ in },
        unchanged: (inout State, Result) -> Void = { _, _ in }
    ) async throws(OutboxError) -> (Result, StoreAcknowledgement?) {
        if let done = try submit(
            newBodies: newBodies, roomIfAny: reservedRoom, change, whileLocked: whileLocked, unchanged: unchanged)
        {
            return done
        }
        let room = try await reserveRoom(for: newBodies)
        return try submit(newBodies: newBodies, room: room, change, whileLocked: whileLocked, unchanged: unchanged)
    }

    /// ``submit(newBodies:_:whileLocked:unchanged:)`` in `room`, reserved
    /// before the call.
    func submit<Result>(
        newBodies: [PreparedBody] = [], room: StoreRoom, _ change: (inout Scheduler) throws(OutboxError) -> (Result, StoreChanges),
        whileLocked: (inout State, Result, StoreAcknowledgement) -> Void = { _, _, _ in },
        unchanged: (inout State, Result) -> Void = { _, _ in }
    ) throws(OutboxError) -> (Result, StoreAcknowledgement?) {
        guard let done = try submit(newBodies: newBodies, roomIfAny: room, change, whileLocked: whileLocked, unchanged: unchanged)
        else { throw OutboxError(.invalidArgument, "internal error: a change in reserved room found none") }
        return done
    }

    /// Both: in `roomIfAny`, or (`nil`) in room reserved under the lock if
    /// storage has it now; `nil`, with nothing changed, if it has not.
    private func submit<Result>(
        newBodies: [PreparedBody], roomIfAny: StoreRoom?, _ change: (inout Scheduler) throws(OutboxError) -> (Result, StoreChanges),
        whileLocked: (inout State, Result, StoreAcknowledgement) -> Void,
        unchanged: (inout State, Result) -> Void
    ) throws(OutboxError) -> (Result, StoreAcknowledgement?)? {
        var checkpointDue = false
        defer { if checkpointDue { startCheckpoint() } }
        return try state.withLock { state throws(OutboxError) -> (Result, StoreAcknowledgement?)? in
            try check(state)
            let room: StoreRoom
            if let roomIfAny {
                room = roomIfAny
            } else {
                guard state.loading == nil, let taken = backend.reserveRoomNow(bytes: Self.roomBytes(for: newBodies)) else {
                    return nil
                }
                room = taken
            }
            // From here on the room is committed with the change, or given back when dropped.
            try checkLoaded(state)
            let (result, changes) = try change(&state.scheduler)
            guard !changes.isEmpty else {
                unchanged(&state, result)
                return (result, nil)
            }
            let acknowledgement: StoreAcknowledgement
            do throws(OutboxError) {
                acknowledgement = try backend.submit(changes, newBodies: newBodies, scheduler: state.scheduler, room: room)
            } catch {
                state.failure = error
                throw error
            }
            let observed = acknowledgement.announcing(changes, to: feed)
            whileLocked(&state, result, observed)
            let bodies = newBodies.reduce(0) { $0 + $1.storedBytes }
            checkpointDue = noteWritten(bytes: bodies + 64 * changes.count, in: &state)
            return (result, observed)
        }
    }

    /// Outside the lock, when ``submit(newBodies:_:whileLocked:unchanged:)``
    /// found no room now: waits until the store is loaded and storage has
    /// room for a change (the new body and a few state records).
    func reserveRoom(for newBodies: [PreparedBody] = []) async throws(OutboxError) -> StoreRoom {
        await waitUntilLoaded()
        return try await backend.reserveRoom(bytes: Self.roomBytes(for: newBodies))
    }

    private static func roomBytes(for newBodies: [PreparedBody]) -> Int {
        newBodies.reduce(0) { $0 + ($1.encoded?.count ?? 0) } + roomForStateRecords
    }

    /// Room reserved for the state records of one change besides a new
    /// body: a handful of ~100-byte records. A change that writes more (a
    /// large claim, `clear`) is still admitted, past the bound by the rest.
    static let roomForStateRecords = 4096

    /// The second half of ``perform(_:newBody:_:)``: waits for submitted
    /// changes to reach `durability`.
    func wait(for acknowledgement: StoreAcknowledgement?, _ durability: Durability) async throws(OutboxError) {
        guard let acknowledgement else { return }
        do throws(OutboxError) {
            try await acknowledgement.wait(durability)
        } catch {
            fail(error)
            throw error
        }
    }

    /// ``wait(for:_:)`` when no waiting is needed (see
    /// ``StoreAcknowledgement/reachedWithoutWaiting(_:)``); `false` if it is.
    func reachedWithoutWaiting(
        _ acknowledgement: StoreAcknowledgement?, _ durability: Durability
    ) throws(OutboxError) -> Bool {
        guard let acknowledgement else { return true }
        do throws(OutboxError) {
            return try acknowledgement.reachedWithoutWaiting(durability)
        } catch {
            fail(error)
            throw error
        }
    }

    /// Memory and storage may disagree from here on: refuse every call until
    /// a reopen rebuilds memory from disk.
    func fail(_ error: OutboxError) {
        state.withLock { $0.failure = $0.failure ?? error }
    }

    func check(_ state: State) throws(OutboxError) {
        if let configurationError { throw configurationError }
        if state.closed { throw OutboxError(.closed, "the store is closed") }
        if let failure = state.failure {
            throw OutboxError(.closed, "storage failed earlier; reopen the store: \(failure)", storage: failure.storage)
        }
    }

    /// Runs `body` on the loaded scheduler. Call ``waitUntilLoaded()`` first.
    func read<Result>(_ body: (inout Scheduler) -> Result) throws(OutboxError) -> Result {
        try state.withLock { state throws(OutboxError) -> Result in
            try check(state)
            try checkLoaded(state)
            return body(&state.scheduler)
        }
    }

    /// Every path to the scheduler waits for the load first: reaching it
    /// before would read an empty queue.
    private func checkLoaded(_ state: State) throws(OutboxError) {
        if state.loading != nil {
            throw OutboxError(.invalidArgument, "internal error: the store was used before it finished loading")
        }
    }

    /// Memory the scheduler holds per entry, for benchmarks.
    var entryCount: Int { state.withLock { $0.scheduler.entries.count } }
}
