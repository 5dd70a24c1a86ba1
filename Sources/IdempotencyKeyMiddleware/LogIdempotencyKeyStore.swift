import Dispatch
import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage

/// Keys on disk, in a compact append-only key journal: the durable default.
///
/// - **Never runs a handler twice.** A claim is made durable before
///   ``begin(key:fingerprint:now:claim:)`` lets the request run, and a
///   response before it is sent. A server killed mid-request leaves the
///   claim: after a restart its key is answered outcome-unknown (never run
///   again) until it expires or an operator resolves it.
/// - **Memory does not grow with responses.** Completed keys are held as a
///   96-bit keyed digest and a record location (about 30–60 bytes per key
///   with the dictionary's slack); responses are read from disk on a replay.
/// - **Restart does not read every record.** Each sealed segment has an
///   index file (a 28-byte entry per key: claims settled in the same segment
///   are left out); an open reads those and scans only
///   the active segment.
/// - **Expiry reclaims disk.** Segments are removed whole, oldest first,
///   once every record in them expired.
/// - **A cap that never forgets early.** With ``Configuration/maximumKeys``
///   or ``Configuration/maximumBytes``, a new key at the cap is refused
///   (``IdempotencyBeginResult/atCapacity(retryAfter:)``, 503 with
///   `Retry-After`), never admitted by evicting a live key.
/// - **Group commit.** Concurrent claims and completions share one
///   `fdatasync` on the journal's writer thread.
///
/// What it cannot do alone: make a handler's effect and the stored response
/// one atomic write. For that, implement ``IdempotencyKeyStore`` on the
/// database your handler writes to.
public final class LogIdempotencyKeyStore: IdempotencyKeyStore {
    /// How the store is opened and bounded.
    public struct Configuration: Sendable {
        /// A segment is sealed and a new one started past this size. Expired
        /// keys are reclaimed a segment at a time. Default 8 MiB.
        public var segmentSize = 8 << 20
        /// The largest record (a completed key's response, with its headers
        /// and key) the store keeps; ``complete(key:response:now:expiresAt:)``
        /// throws ``IdempotencyKeyStoreError/Code/responseTooLarge`` past it
        /// (the middleware then stores a 410 marker). Default 2 MiB.
        public var maximumRecordSize = 2 << 20
        /// The most keys held at once; `nil` for no limit.
        public var maximumKeys: Int?
        /// The most bytes of journal files; `nil` for no limit.
        public var maximumBytes: Int64?
        /// The file system under the journal; replace it to inject faults.
        public var fileSystem: any FileSystem = PosixFileSystem()

        public init() {}
    }

    let directory: FilePath
    let configuration: Configuration
    let digester: KeyDigester
    let writer: JournalWriter
    let state: Locked<JournalState>
    private let lock: FileDescriptor
    private let readQueue = DispatchQueue(label: "idempotency-journal-read", attributes: .concurrent)
    /// What the open found.
    public let recovery: JournalRecoveryReport

    init(
        directory: FilePath, configuration: Configuration, digester: KeyDigester, writer: JournalWriter, state: JournalState,
        lock: FileDescriptor, recovery: JournalRecoveryReport
    ) {
        self.directory = directory
        self.configuration = configuration
        self.digester = digester
        self.writer = writer
        self.state = Locked(state)
        self.lock = lock
        self.recovery = recovery
    }

    deinit {
        // A store dropped without close(): finish the queued writes and stop
        // the writer thread in the background, and let the directory go.
        writer.closeInBackground()
        if !closed.withLock({ $0 }) { try? configuration.fileSystem.close(lock) }
    }

    // MARK: IdempotencyKeyStore

    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        let digest = digester.digest(key)
        switch try lookup(key: key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) {
        case .answer(let result): return result
        case .claim: return try await claimKey(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim)
        case .read(let slot):
            // Held in progress while its record is read: a concurrent
            // request with the key gets 409 meanwhile, never a second run.
            let record: JournalRecord?
            do {
                record = try await read(slot.location)
                state.withLock { _ = $0.unsettled.removeValue(forKey: key) }
            } catch let error as Errno where error == .noSuchFileOrDirectory {
                // Its segment expired and was removed meanwhile.
                state.withLock { _ = $0.unsettled.removeValue(forKey: key) }
                return try await claimKey(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim)
            } catch {
                state.withLock { _ = $0.unsettled.removeValue(forKey: key) }
                throw error
            }
            guard case .complete(let recordKey, let recordFingerprint, let response, let expiresAt)? = record else {
                throw IdempotencyKeyStoreError(.damaged, "the record of key \(key) in \(directory) cannot be read")
            }
            guard recordKey == key else {
                throw IdempotencyKeyStoreError(.digestCollision, "key \(key) shares its index digest with another live key")
            }
            if expiresAt <= now { return try await claimKey(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) }
            return recordFingerprint == fingerprint ? .completed(response) : .fingerprintMismatch
        }
    }

    private enum Lookup {
        case answer(IdempotencyBeginResult)
        case claim
        case read(JournalSlot)
    }

    /// Decides from memory, or says which record to read.
    private func lookup(key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) throws -> Lookup {
        try state.withLock { state in
            if let record = state.unsettled[key] {
                switch KeyRecord.decide(record, key: key, fingerprint: fingerprint, now: now, claim: claim) {
                case .answer(let result): return .answer(result)
                case .claim: return .claim
                case .abandonClaim(let unsettled):
                    state.unsettled[key]?.state = .outcomeUnknown(since: unsettled.since, expiresAt: unsettled.expiresAt, reason: .claimAbandoned)
                    // Best effort: memory answers from now on; if the journal
                    // cannot take it, the claim it holds reads as outcome
                    // unknown after a restart anyway.
                    _ = try? append(.unknown(key: key, fingerprint: record.fingerprint, since: unsettled.since, expiresAt: unsettled.expiresAt), &state)
                    return .answer(.outcomeUnknown(unsettled))
                }
            }
            // The slot's expiry is rounded up: past it the key is surely
            // expired; before it, the record's exact expiry decides.
            guard let slot = state.index[digest.hash], slot.expires > JournalFormat.nowSeconds(now) else { return .claim }
            guard slot.check == digest.check else {
                throw IdempotencyKeyStoreError(.digestCollision, "key \(key) shares its index hash with another live key")
            }
            state.unsettled[key] = KeyRecord(
                fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
            return .read(slot)
        }
    }

    /// Claims `key` durably, or refuses it at the cap.
    private func claimKey(_ key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws
        -> IdempotencyBeginResult
    {
        if let full = capacityRefusal(adding: key, now: now) {
            try await expire(now: now)
            if capacityRefusal(adding: key, now: now) != nil { return .atCapacity(retryAfter: .seconds(full)) }
        }
        let record = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
        let claimed = try state.withLock { state -> Either in
            // Another request may have claimed the key since the lookup.
            if let existing = state.unsettled[key],
                case .answer(let answer) = KeyRecord.decide(existing, key: key, fingerprint: fingerprint, now: now, claim: claim)
            {
                return .answered(answer)
            }
            state.unsettled[key] = record
            do {
                let record = JournalRecord.claim(key: key, fingerprint: fingerprint, since: now, expiresAt: claim.expiresAt)
                return .queued(try appendLocated(record, digest: digest, &state).1)
            } catch {
                state.unsettled[key] = nil
                throw error
            }
        }
        let sequence: UInt64
        switch claimed {
        case .queued(let value): sequence = value
        case .answered(let answer): return answer
        }
        do {
            try await writer.wait(for: sequence, durable: true)
        } catch {
            state.withLock { state in
                if state.unsettled[key] == record { state.unsettled[key] = nil }
            }
            throw error
        }
        return .proceed
    }

    private enum Either {
        case queued(UInt64)
        case answered(IdempotencyBeginResult)
    }

    /// Seconds until room is made, if adding `key` would pass a cap.
    private func capacityRefusal(adding key: String, now: Date) -> Int? {
        state.withLock { state in
            let full = configuration.maximumKeys.map { state.keyCount >= $0 } == true
                || configuration.maximumBytes.map { state.totalBytes >= $0 } == true
            return full ? state.secondsUntilFirstReclaim(now: JournalFormat.nowSeconds(now)) : nil
        }
    }

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        guard let fingerprint = state.withLock({ state -> [UInt8]? in
            guard case .inProgress = state.unsettled[key]?.state else { return nil }
            return state.unsettled[key]?.fingerprint
        }) else { return }
        try await settle(key: key, with: .complete(key: key, fingerprint: fingerprint, response: response, expiresAt: expiresAt)) {
            if case .inProgress = $0.state { true } else { false }
        }
    }

    public func abandon(key: String, owner: String) async throws {
        let sequence = try state.withLock { state -> UInt64? in
            guard case .inProgress(_, let holder, let expiresAt) = state.unsettled[key]?.state, holder == owner else { return nil }
            state.unsettled[key] = nil
            return try append(.release(key: key, expiresAt: expiresAt), &state)
        }
        // Not waited for durably: a release lost in a crash leaves the claim,
        // answered outcome-unknown after the restart — never a second run.
        if let sequence { try await writer.wait(for: sequence, durable: false) }
    }

    public func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        let sequence = try state.withLock { state -> UInt64? in
            guard let record = state.unsettled[key], case .inProgress(let since, let holder, _) = record.state, holder == owner else {
                return nil
            }
            state.unsettled[key]?.state = .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .responseNotRecorded)
            return try append(.unknown(key: key, fingerprint: record.fingerprint, since: since, expiresAt: expiresAt), &state)
        }
        if let sequence { try await writer.wait(for: sequence, durable: true) }
    }

    public func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        guard let record = state.withLock({ $0.unsettled[key] }), case .outcomeUnknown(_, let expiresAt, _) = record.state, expiresAt > now
        else {
            throw IdempotencyKeyStoreError(.notUnsettled, "the outcome of key \(key) is not unknown")
        }
        let isUnknown: (KeyRecord) -> Bool = { if case .outcomeUnknown = $0.state { true } else { false } }
        switch resolution {
        case .applied(let response, let keptUntil):
            try await settle(key: key, with: .complete(key: key, fingerprint: record.fingerprint, response: response, expiresAt: keptUntil), when: isUnknown)
        case .notApplied:
            try await settle(key: key, with: .release(key: key, expiresAt: expiresAt), when: isUnknown)
        }
    }

    /// Writes `settlement` durably for `key` if its unsettled record still
    /// passes `when`, then moves the key out of the unsettled table (into
    /// the index, for a completion).
    private func settle(key: String, with settlement: JournalRecord, when: @escaping (KeyRecord) -> Bool) async throws {
        let frame = JournalFormat.frame(settlement)
        guard frame.count <= configuration.maximumRecordSize else {
            throw IdempotencyKeyStoreError(
                .responseTooLarge, "a record of \(frame.count) bytes exceeds the store's maximumRecordSize of \(configuration.maximumRecordSize)")
        }
        let digest = digester.digest(key)
        let written = try state.withLock { state -> (JournalWriter.Location, UInt64)? in
            guard let record = state.unsettled[key], when(record) else { return nil }
            return try append(frame: frame, digest: digest, settlement, &state)
        }
        guard let (location, sequence) = written else { return }
        try await writer.wait(for: sequence, durable: true)
        state.withLock { state in
            guard let record = state.unsettled[key], when(record) else { return }
            state.unsettled[key] = nil
            if case .complete = settlement {
                state.index[digest.hash] = JournalSlot(
                    check: digest.check, segment: location.segment, offset: location.offset, length: location.length,
                    expires: JournalFormat.expirySeconds(settlement.expiresAt))
            }
        }
    }

    public func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        state.withLock { state in
            state.unsettled.compactMap { $0.value.isExpired(at: now) ? nil : $0.value.unsettled(key: $0.key) }
        }
        .sorted { ($0.since, $0.key) < ($1.since, $1.key) }
        .prefix(max(0, limit)).map { $0 }
    }

    // MARK: Journal access

    /// Queues `record`; call with the state locked, so the journal's order is memory's.
    @discardableResult
    func append(_ record: JournalRecord, _ state: inout JournalState) throws -> UInt64 {
        try append(frame: JournalFormat.frame(record), digest: digester.digest(record.key), record, &state).1
    }

    /// Queues `record` and returns where it goes; call with the state locked.
    func appendLocated(_ record: JournalRecord, digest: KeyDigest, _ state: inout JournalState) throws -> (JournalWriter.Location, UInt64) {
        try append(frame: JournalFormat.frame(record), digest: digest, record, &state)
    }

    private func append(frame: [UInt8], digest: KeyDigest, _ record: JournalRecord, _ state: inout JournalState) throws
        -> (JournalWriter.Location, UInt64)
    {
        let expires = JournalFormat.expirySeconds(record.expiresAt)
        let entry = JournalEntry(digest: digest, offset: 0, length: 0, expires: expires, kind: record.kind)
        let (location, sequence) = try writer.submit(frame, entry: entry)
        state.account(location, expires: expires)
        return (location, sequence)
    }

    /// Reads a record on the read queue (never the cooperative pool).
    func read(_ location: JournalWriter.Location) async throws -> JournalRecord? {
        let (directory, fileSystem) = (self.directory, configuration.fileSystem)
        return try await withCheckedThrowingContinuation { continuation in
            readQueue.async {
                continuation.resume(with: Result { () throws(Errno) in
                    try JournalFiles.readRecord(location, in: directory, fileSystem: fileSystem)
                })
            }
        }
    }

    // MARK: Inspection and life cycle

    /// Keys currently held (completed until their segment is reclaimed, in
    /// progress, and outcome unknown).
    public var count: Int { state.withLock { $0.keyCount } }

    /// Bytes of journal segments on disk.
    public var journalBytes: Int64 { state.withLock { $0.totalBytes } }

    /// Journal segments on disk (the active one included).
    public var segmentCount: Int { state.withLock { $0.segments.count } }

    private let closed = Locked(false)

    /// Writes everything, syncs, and releases the directory. Idempotent.
    public func close() async throws {
        await writer.close()
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { try configuration.fileSystem.close(lock) }
    }
}
