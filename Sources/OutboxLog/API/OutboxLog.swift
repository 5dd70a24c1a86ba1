import Foundation
import SystemPackage

/// A segmented, CRC-framed, append-only log of keyed records: an embeddable
/// durable queue and key-value log that never hands back a corrupted record
/// and never loses an acknowledged one.
///
/// ```swift
/// let log = try await OutboxLog.open(at: "/var/lib/app/queue")
/// let sequence = try await log.put("order-42", Array(json.utf8), durability: .durable)
/// if let entry = try await log.get("order-42") { ... }
/// try await log.delete("order-42", durability: .durable)
/// try await log.close()
/// ```
///
/// ## Records
/// Every record has a key, a kind (``RecordKind/value``,
/// ``RecordKind/annotation`` or ``RecordKind/tombstone``), a payload, and a
/// sequence number that increases across the whole log. A key's *value* is
/// its latest value record; its *annotation* is a small side record that
/// changes without rewriting the value (a queue entry's delivery state, say).
/// ``append(_:durability:)`` writes several records as one atomic batch.
///
/// ## Durability
/// Chosen per append with ``Durability``: `buffered`, `written` or
/// `durable`. Concurrent `durable` appends share one sync (group commit).
/// If a write or sync fails, the log is *poisoned*: every later call throws
/// ``OutboxLogError/Code/poisoned`` until it is closed and reopened, because
/// what reached the disk is unknown; a failed sync is never retried.
///
/// ## Recovery
/// ``open(at:configuration:)-(FilePath,_)`` verifies every record's CRC and rebuilds the
/// in-memory index. A torn tail left by a crash is cut and reported; any
/// other damage fails the open with the file, offset and reason, unless the
/// configuration asks to salvage. See ``recoveryReport``.
///
/// ## Concurrency
/// `OutboxLog` is `Sendable`; call it from any task. Blocking I/O and
/// syncs run on the log's own threads, never on Swift's cooperative pool.
/// Only one `OutboxLog` may have a directory open at a time, in this process
/// or another (a POSIX record lock on `LOCK`); a second open throws
/// ``OutboxLogError/Code/locked`` and leaves the first one's lock in place.
/// At most ``Configuration/maximumPendingBytes`` of appended records wait in
/// memory for the writer: appends beyond it wait for room, and
/// ``submit(_:)`` is refused with ``OutboxLogError/Code/backPressure``.
public final class OutboxLog: Sendable {
    let core: LogCore

    private init(core: LogCore) { self.core = core }

    deinit { core.closeInBackground() }

    /// Opens the log in `directory`, creating it if the configuration allows,
    /// and recovers it.
    ///
    /// - Throws: ``OutboxLogError`` — `.locked` if the log is open elsewhere,
    ///   `.corruption` for damage beyond a torn tail (strict mode),
    ///   `.unsupportedFormat` for a newer format (nothing is modified),
    ///   `.notFound`, `.io`.
    ///
    /// - Complexity: with an index checkpoint (the default), O(*n*) in the
    ///   live keys it holds plus O(*b*) in the bytes written after it, read
    ///   and verified (the newest segment before the open returns, the rest
    ///   in the background); without one, O(*B*) in every segment's bytes.
    public static func open(
        at directory: FilePath, configuration: Configuration = Configuration()
    ) async throws(OutboxLogError) -> OutboxLog {
        OutboxLog(core: try await LogCore.open(at: directory, configuration: configuration))
    }

    /// Opens the log like ``open(at:configuration:)-(FilePath,_)``, and
    /// collects the keys of every record after `changesAfter` — a client's
    /// own checkpoint position (``position``) — for ``changedKeys()``.
    package static func open(
        at directory: FilePath, configuration: Configuration, changesAfter: LogPosition?
    ) async throws(OutboxLogError) -> OutboxLog {
        OutboxLog(core: try await LogCore.open(at: directory, configuration: configuration, changesAfter: changesAfter))
    }

    /// Deletes the log in `directory` and the directory itself (a user's
    /// data at logout, say). Fails with ``OutboxLogError/Code/locked`` —
    /// deleting nothing — if the log is open, in this process or another.
    /// Deleting a directory that does not exist succeeds.
    public static func destroy(
        at directory: FilePath, fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxLogError) {
        let pool = BlockingThreadPool(threads: 1, name: "outbox-destroy")
        defer { pool.shutdown() }
        try await pool.run { () throws(OutboxLogError) in
            try LogDirectoryRemoval(directory: directory, fileSystem: fileSystem).run()
        }
    }

    /// What the open found and repaired.
    public var recoveryReport: RecoveryReport { core.recoveryReport }

    /// The directory of the log.
    public var directory: FilePath { core.layout.directory }

    // MARK: Writing

    /// Appends `writes` as one atomic batch: after a crash, recovery finds
    /// all of them or none. Returns the sequence number of the last record.
    ///
    /// If ``Configuration/maximumPendingBytes`` of earlier records are still
    /// waiting to be written, it first waits (first come, first served) for
    /// the writer to make room: whatever the durability, appended bytes in
    /// memory stay within that bound (a batch larger than the bound is
    /// admitted alone, once nothing else waits).
    ///
    /// Nothing is written, and the log stays usable, if the batch is
    /// invalid: an empty batch, an empty key or one longer than
    /// ``LogKey/maximumLength``, a tombstone with a payload, a batch larger
    /// than ``Configuration/absoluteMaximumBatchSize``, an annotation of a key
    /// with no value (`.invalidArgument`), or a record larger than
    /// ``Configuration/maximumRecordSize`` (`.recordTooLarge`).
    ///
    /// - Complexity: O(*k* + *b*) for *k* records of *b* bytes (encoded,
    ///   checksummed and indexed under the log's lock: an index update is
    ///   O(1) on average), plus the wait for room and for `durability`.
    @discardableResult
    public func append(_ writes: [LogWrite], durability: Durability) async throws(OutboxLogError) -> UInt64 {
        try await core.append(writes, durability: durability)
    }

    /// Encodes `writes` as one atomic batch into the log *now*, in call
    /// order, and returns without waiting for any I/O. Await the ticket to
    /// reach the durability you need:
    ///
    /// ```swift
    /// let ticket = try log.submit([.value(key, payload)])
    /// try await ticket.wait(for: .durable)
    /// ```
    ///
    /// Use it to pipeline many appends from one producer, or to keep the
    /// log's order identical to the order of your own state changes (submit
    /// while holding your lock, wait after releasing it). Until a ticket is
    /// awaited (or a later write or sync happens), its records are only
    /// `buffered`. Validation is the same as ``append(_:durability:)``.
    ///
    /// Back-pressure: it obeys ``Configuration/maximumPendingBytes`` like
    /// every append, but cannot wait for room, so when the batch would take
    /// the bytes waiting to be written past it, it throws
    /// ``OutboxLogError/Code/backPressure`` and writes nothing. Await
    /// ``waitForRoom(bytes:)`` (outside your lock) and submit again, or, if
    /// you cannot take a refusal, reserve the room first
    /// (``reserve(bytes:)``, ``LogReservation``).
    ///
    /// - Complexity: O(*k* + *b*) for *k* records of *b* bytes, as
    ///   ``append(_:durability:)``; it never waits.
    public func submit(_ writes: [LogWrite]) throws(OutboxLogError) -> LogTicket {
        LogTicket(core: core, sequence: try core.submit(writes))
    }

    /// Waits until room for a batch of `bytes` bytes is reserved for the
    /// caller, first come first served, and returns it: commit the batch in
    /// it with ``LogReservation/commit(_:)``, which is never refused for
    /// back-pressure. Throws at once if the log refuses writes (closed,
    /// poisoned: that error; read-only: `.invalidArgument`) or no batch can
    /// be `bytes` long (negative, or over
    /// ``Configuration/absoluteMaximumBatchSize``: `.invalidArgument`). The
    /// wait is not cancellable: it ends when the writer makes room or the
    /// log fails or closes.
    ///
    /// - Complexity: O(1) when the room is there; otherwise it waits behind
    ///   every earlier waiter.
    public func reserve(bytes: Int) async throws(OutboxLogError) -> LogReservation {
        try checkReservable(bytes)
        try await core.reserveRoom(bytes)
        return LogReservation(core: core, bytes: bytes)
    }

    /// Reserves room for a batch of `bytes` bytes if it is there now,
    /// without waiting; `nil` if it is not, or the log refuses writes, or
    /// no batch can be that long: ``reserve(bytes:)`` then waits for it, or
    /// says why.
    ///
    /// - Complexity: O(1).
    public func reserveIfAvailable(bytes: Int) -> LogReservation? {
        guard (try? checkReservable(bytes)) != nil, core.reserveRoomNow(bytes) else { return nil }
        return LogReservation(core: core, bytes: bytes)
    }

    /// Waits until a batch of `bytes` bytes would be admitted under
    /// ``Configuration/maximumPendingBytes`` now: the writer has written
    /// enough, and no append that waited earlier is still waiting. Another
    /// producer may take the room first, so a ``submit(_:)`` after it may
    /// still be refused with ``OutboxLogError/Code/backPressure``. Throws
    /// `.invalidArgument` at once for a size no batch can have (negative,
    /// or over ``Configuration/absoluteMaximumBatchSize``).
    public func waitForRoom(bytes: Int = 0) async throws(OutboxLogError) {
        try checkSize(bytes)
        try await core.waitForRoom(bytes: bytes)
    }

    /// Room only a batch could fill: a size no batch can have would
    /// overflow the room counts.
    private func checkSize(_ bytes: Int) throws(OutboxLogError) {
        guard bytes >= 0, bytes <= Configuration.absoluteMaximumBatchSize else {
            throw OutboxLogError(
                .invalidArgument,
                "no batch can take \(bytes) bytes: a batch is 0 to \(Configuration.absoluteMaximumBatchSize) bytes")
        }
    }

    private func checkReservable(_ bytes: Int) throws(OutboxLogError) {
        try checkSize(bytes)
        if core.configuration.readOnly { throw OutboxLogError(.invalidArgument, "the log was opened read-only") }
    }

    /// Sets the value of `key`, expiring at `expiresAt` if given (see
    /// ``LogWrite/expiresAt``). Returns the record's sequence number.
    @discardableResult
    public func put(_ key: LogKey, _ value: [UInt8], expiresAt: Date? = nil, durability: Durability) async throws(OutboxLogError)
        -> UInt64
    {
        try await core.append(CollectionOfOne(.value(key, value, expiresAt: expiresAt)), durability: durability)
    }

    /// Replaces the annotation of `key`'s value, expiring at `expiresAt` if
    /// given. The key must have a value.
    @discardableResult
    public func annotate(_ key: LogKey, _ annotation: [UInt8], expiresAt: Date? = nil, durability: Durability)
        async throws(OutboxLogError) -> UInt64
    {
        try await core.append(CollectionOfOne(.annotation(key, annotation, expiresAt: expiresAt)), durability: durability)
    }

    /// Deletes `key`. Returns the tombstone's sequence number, or `nil` (and
    /// writes nothing) if the key had no value.
    @discardableResult
    public func delete(_ key: LogKey, durability: Durability) async throws(OutboxLogError) -> UInt64? {
        try await core.waitForIndex()
        guard core.contains(key) else { return nil }
        return try await core.append(CollectionOfOne(.tombstone(key)), durability: durability)
    }

    /// Writes every buffered record to the OS (survives an app kill).
    public func flush() async throws(OutboxLogError) { try await core.flush(durable: false) }

    /// Makes every record appended so far durable (survives power loss).
    public func sync() async throws(OutboxLogError) { try await core.flush(durable: true) }

    /// Sizes and progress.
    public var statistics: LogStatistics { core.statistics }

    // MARK: Checkpoints of a client (package)

    /// Where the log stands now — the last record appended and the segments
    /// — for a client's checkpoint of its own state derived from the log.
    /// Taken while the client's own lock keeps its appends out, it names
    /// exactly the records the client's state reflects.
    package var position: LogPosition { core.position }

    /// The keys of every record after the position given to
    /// ``open(at:configuration:changesAfter:)``, as the open found the log;
    /// `nil` if none was given, or the log no longer holds that history (a
    /// compaction or a repair since, or another log). Waits for the index.
    package func changedKeys() async throws(OutboxLogError) -> Set<LogKey>? {
        try await core.waitForIndex()
        if case .known(let keys) = core.changedKeys.withLock({ $0 }) { return keys }
        return nil
    }

    /// Whether the open was given a position (``open(at:configuration:changesAfter:)``)
    /// and the log still holds the history after it: ``changedKeys()`` will
    /// then return its keys (unless the index load fails).
    package var holdsHistory: Bool { core.holdsHistory }

    /// Whether the index is complete (an open that returned before loading
    /// it finishes in the background).
    package var isIndexLoaded: Bool { core.isIndexLoaded }

    /// Waits until every record up to `sequence` is durable.
    package func waitUntilDurable(_ sequence: UInt64) async throws(OutboxLogError) {
        try await core.waitFor(sequence, durable: true)
    }

    /// Calls `observer` (on the compaction's thread) after each compaction
    /// that rewrote segments: a client's checkpoint taken before it no
    /// longer matches the log (``LogPosition``).
    package func observeCompactions(_ observer: @escaping @Sendable () -> Void) {
        core.compactionObserver.withLock { $0 = observer }
    }

    // MARK: Maintenance

    /// Compacts now: seals the active segment, then rewrites every sealed
    /// segment from the first one with dead records on, keeping only live
    /// records. Appends continue meanwhile. Waits for a running automatic
    /// compaction first.
    ///
    /// - Complexity: O(*b*) in the bytes of the segments rewritten (read,
    ///   verified, the live ones copied, on the compaction's own thread),
    ///   with the index checked in batches under the lock; one file
    ///   creation, sync and deletion per segment.
    @discardableResult
    public func compact() async throws(OutboxLogError) -> CompactionReport {
        try await core.compact(sealActive: true)
    }

    /// Removes the oldest segments whose every value and annotation has
    /// expired by `now` (time-based retention, as Kafka's `retention.ms`
    /// drops whole segments): the keys whose values they held are gone from
    /// then on, with their annotations wherever those are, and their bytes
    /// are freed without copying anything.
    ///
    /// A segment goes only with every segment before it, so a tombstone is
    /// never removed while a record it deletes remains; a value or
    /// annotation without an expiry (``LogWrite/expiresAt``), live or
    /// superseded, keeps its segment, and every segment after it, until
    /// compaction drops it. An active segment that holds only expired records
    /// is sealed first, so that a quiet log's records go too; the new active
    /// segment stays, empty (when every segment before it goes too: sealing
    /// waits for a sync). The removal is atomic across a crash (the
    /// compaction's intent, Docs/FORMAT.md), and waits for a running
    /// compaction.
    ///
    /// - Complexity: O(*r*) in the records of the segments removed (read
    ///   off the log's lock, then dropped from the index under it), plus one
    ///   file deletion per segment; O(*s*) in segments when nothing has
    ///   expired. With index checkpoints on, a checkpoint follows (O(*n*) in
    ///   live keys, written on the retention's thread).
    ///
    /// - Parameters:
    ///   - now: The time expiries are compared with.
    ///   - floor: With a floor, only segments whose every record has a
    ///     sequence number below it go, as ``removeSegments(before:)``: what
    ///     a queue keeps for a consumer that has not read past it.
    @discardableResult
    public func removeExpired(now: Date = Date(), below floor: UInt64 = .max) async throws(OutboxLogError) -> RetentionReport {
        try await core.removeExpired(now: RecordExpiry.passed(at: now), below: floor)
    }

    /// Removes the oldest segments whose every record has a sequence number
    /// below `sequence`, whole and whatever their expiry: retention by
    /// position, as a queue drops what every consumer has read past. The
    /// newest segment always stays (it carries the sequence floor), so
    /// records of the segment being appended to are never removed; keys
    /// whose live value was in a removed segment are gone from the log. The
    /// removal is atomic across a crash, like ``removeExpired(now:below:)``, and
    /// waits for a running compaction.
    ///
    /// - Throws: `.invalidArgument` for a log opened read-only; `.closed`,
    ///   `.poisoned`, `.io`.
    ///
    /// - Complexity: as ``removeExpired(now:below:)``: O(*r*) in the records of
    ///   the segments removed, plus one file deletion per segment.
    @discardableResult
    public func removeSegments(before sequence: UInt64) async throws(OutboxLogError) -> RetentionReport {
        try await core.removeSegments(before: sequence)
    }

    /// Removes the oldest segments, whole and whatever their expiry, until
    /// the log's segment files hold at most `limit` bytes (headers included,
    /// as ``LogStatistics/totalBytes``) — retention by size, as Kafka's
    /// `retention.bytes` — stopping at the first segment that holds a record
    /// at or past `floor`. The newest segment always stays, so the log can
    /// stay above a limit smaller than it; keys whose live value was in a
    /// removed segment are gone from the log. Atomic across a crash, like
    /// ``removeExpired(now:below:)``, and waits for a running compaction.
    ///
    /// - Throws: `.invalidArgument` for a negative limit or a log opened
    ///   read-only; `.closed`, `.poisoned`, `.io`.
    ///
    /// - Complexity: O(*s*) in segments to choose, then as
    ///   ``removeExpired(now:below:)``: O(*r*) in the records of the segments
    ///   removed, plus one file deletion per segment.
    @discardableResult
    public func removeOldestSegments(keepingAtMost limit: Int64, below floor: UInt64 = .max) async throws(OutboxLogError)
        -> RetentionReport
    {
        try await core.removeOldestSegments(keepingAtMost: limit, below: floor)
    }

    /// Waits until a compaction running in the background (started
    /// automatically after a segment roll) has finished.
    public func waitForBackgroundCompaction() async { await core.waitForCompaction() }

    /// Writes and syncs everything, then releases the files and the lock.
    /// Every later call throws ``OutboxLogError/Code/closed``. Idempotent.
    public func close() async throws(OutboxLogError) { try await core.close() }
}
