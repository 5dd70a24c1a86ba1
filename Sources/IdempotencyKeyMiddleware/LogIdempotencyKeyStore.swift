import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage

/// Keys on disk, in an ``OutboxLog``: the durable default.
///
/// - **Never runs a handler twice.** A claim is made durable before
///   ``begin(key:fingerprint:now:claim:)`` lets the request run, and a
///   response before it is sent. A server killed mid-request leaves the
///   claim: after a restart its key is answered outcome-unknown (never run
///   again) until it expires or an operator resolves it.
/// - **Memory does not grow with responses.** The log's index holds each
///   completed key as a 13-byte digest key and a record location (about 70
///   bytes per key); responses are read from disk on a replay.
/// - **Restart does not read every record.** The log's index checkpoint
///   holds every key's place, so an open reads it and the records written
///   after it; the few unsettled keys are found by their log keys' prefix.
/// - **Expiry reclaims disk.** Every record carries its key's expiry, and
///   the log's retention removes segments whole, oldest first, once every
///   record in them expired.
/// - **A cap that never forgets early.** With ``Configuration/maximumKeys``
///   or ``Configuration/maximumBytes``, a new key at the cap is refused
///   (``IdempotencyBeginResult/atCapacity(retryAfter:)``, 503 with
///   `Retry-After`), never admitted by evicting a live key.
/// - **Group commit.** Concurrent claims and completions share one
///   `fdatasync` on the log's writer thread.
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
        /// The most bytes of log segments; `nil` for no limit.
        public var maximumBytes: Int64?
        /// The file system under the log; replace it to inject faults.
        public var fileSystem: any FileSystem = PosixFileSystem()

        public init() {}
    }

    let directory: FilePath
    let configuration: Configuration
    let digester: KeyDigester
    let log: OutboxLog
    /// Keys not settled yet (in progress, outcome unknown), whole: few, and
    /// every request with one of them is decided from memory.
    let unsettled: Locked<[String: KeyRecord]>
    /// What the open found.
    public let recovery: KeyStoreRecoveryReport

    init(
        directory: FilePath, configuration: Configuration, digester: KeyDigester, log: OutboxLog,
        unsettled: [String: KeyRecord], recovery: KeyStoreRecoveryReport
    ) {
        self.directory = directory
        self.configuration = configuration
        self.digester = digester
        self.log = log
        self.unsettled = Locked(unsettled)
        self.recovery = recovery
    }

    // MARK: IdempotencyKeyStore

    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        let digest = digester.digest(key)
        switch try lookup(key: key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) {
        case .answer(let result): return result
        case .claim: return try await claimKey(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim)
        case .read:
            // Held in progress while its record is read: a concurrent
            // request with the key gets 409 meanwhile, never a second run.
            let entry: LogEntry?
            do {
                entry = try await log.get(digest.settledKey)
            } catch {
                unsettled.withLock { _ = $0.removeValue(forKey: key) }
                throw Self.storeError(error)
            }
            unsettled.withLock { _ = $0.removeValue(forKey: key) }
            // Removed by retention meanwhile: the key expired.
            guard let entry else { return try await claimKey(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) }
            guard let expiresAt = entry.expiresAt, case .completed(let recordKey, let recordFingerprint, let response)? = KeyStoreRecord.decode(entry.value)
            else {
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
        /// The key's completed record must be read.
        case read
    }

    /// Decides from memory, or says that the completed record must be read.
    private func lookup(key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) throws -> Lookup {
        try unsettled.withLock { unsettled in
            if let record = unsettled[key] {
                switch KeyRecord.decide(record, key: key, fingerprint: fingerprint, now: now, claim: claim) {
                case .answer(let result): return .answer(result)
                case .claim: return .claim
                case .abandonClaim(let stale):
                    unsettled[key]?.state = .outcomeUnknown(since: stale.since, expiresAt: stale.expiresAt, reason: .claimAbandoned)
                    // Best effort, not waited for: memory answers from now
                    // on; if the log cannot take it, the claim it holds
                    // reads as outcome unknown after a restart anyway.
                    let record = KeyStoreRecord.unknown(key: key, fingerprint: record.fingerprint, since: stale.since, reason: .claimAbandoned)
                    _ = try? log.submit([.value(digest.unsettledKey, record.encoded(), expiresAt: stale.expiresAt)])
                    return .answer(.outcomeUnknown(stale))
                }
            }
            guard log.contains(digest.settledKey) else { return .claim }
            unsettled[key] = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
            return .read
        }
    }

    /// Claims `key` durably, or refuses it at the cap.
    private func claimKey(_ key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws
        -> IdempotencyBeginResult
    {
        if capacityRefusal(now: now) != nil {
            try await expire(now: now)
            if let seconds = capacityRefusal(now: now) { return .atCapacity(retryAfter: .seconds(seconds)) }
        }
        let record = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
        let write = LogWrite.value(
            digest.unsettledKey, KeyStoreRecord.claim(key: key, fingerprint: fingerprint, since: now, owner: claim.owner).encoded(),
            expiresAt: claim.expiresAt)
        let submitted = try await submit(
            [write],
            unless: { unsettled -> IdempotencyBeginResult? in
                // Another request may have claimed the key since the lookup.
                guard let existing = unsettled[key],
                    case .answer(let answer) = KeyRecord.decide(existing, key: key, fingerprint: fingerprint, now: now, claim: claim)
                else { return nil }
                return answer
            },
            then: { $0[key] = record })
        let ticket: LogTicket
        switch submitted {
        case .declined(let answer): return answer
        case .submitted(let submitted): ticket = submitted
        }
        do {
            try await ticket.wait(for: .durable)
        } catch {
            unsettled.withLock { unsettled in
                if unsettled[key] == record { unsettled[key] = nil }
            }
            throw Self.storeError(error)
        }
        return .proceed
    }

    /// Seconds until room is made, if a new key would pass a cap.
    private func capacityRefusal(now: Date) -> Int? {
        let statistics = log.statistics
        let full = configuration.maximumKeys.map { statistics.liveKeys >= $0 } == true
            || configuration.maximumBytes.map { statistics.totalBytes >= $0 } == true
        guard full else { return nil }
        guard let next = statistics.nextRemovalAt else { return 60 }
        return max(1, Int(next.timeIntervalSince(now).rounded(.up)))
    }

    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        guard let fingerprint = unsettled.withLock({ unsettled -> [UInt8]? in
            guard case .inProgress = unsettled[key]?.state else { return nil }
            return unsettled[key]?.fingerprint
        }) else { return }
        let record = KeyStoreRecord.completed(key: key, fingerprint: fingerprint, response: response)
        try await settle(key: key, completing: record, expiresAt: expiresAt) { if case .inProgress = $0.state { true } else { false } }
    }

    public func abandon(key: String, owner: String) async throws {
        let digest = digester.digest(key)
        let submitted = try await submit(
            [.tombstone(digest.unsettledKey)],
            unless: { unsettled -> Bool? in
                guard case .inProgress(_, let holder, _) = unsettled[key]?.state, holder == owner else { return false }
                return nil
            },
            then: { $0[key] = nil })
        // Not waited for durably: a release lost in a crash leaves the claim,
        // answered outcome-unknown after the restart — never a second run.
        if case .submitted(let ticket) = submitted {
            do { try await ticket.wait(for: .written) } catch { throw Self.storeError(error) }
        }
    }

    public func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        let digest = digester.digest(key)
        guard let record = unsettled.withLock({ $0[key] }), case .inProgress(let since, let holder, _) = record.state, holder == owner
        else { return }
        let write = LogWrite.value(
            digest.unsettledKey,
            KeyStoreRecord.unknown(key: key, fingerprint: record.fingerprint, since: since, reason: .responseNotRecorded).encoded(),
            expiresAt: expiresAt)
        let submitted = try await submit(
            [write],
            unless: { unsettled -> Bool? in
                guard let current = unsettled[key], case .inProgress(_, let holder, _) = current.state, holder == owner else {
                    return false
                }
                return nil
            },
            then: { $0[key]?.state = .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .responseNotRecorded) })
        if case .submitted(let ticket) = submitted {
            do { try await ticket.wait(for: .durable) } catch { throw Self.storeError(error) }
        }
    }

    public func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        guard let record = unsettled.withLock({ $0[key] }), case .outcomeUnknown(_, let expiresAt, _) = record.state, expiresAt > now
        else {
            throw IdempotencyKeyStoreError(.notUnsettled, "the outcome of key \(key) is not unknown")
        }
        let isUnknown: @Sendable (KeyRecord) -> Bool = { if case .outcomeUnknown = $0.state { true } else { false } }
        switch resolution {
        case .applied(let response, let keptUntil):
            let completed = KeyStoreRecord.completed(key: key, fingerprint: record.fingerprint, response: response)
            try await settle(key: key, completing: completed, expiresAt: keptUntil, when: isUnknown)
        case .notApplied:
            try await settle(key: key, completing: nil, expiresAt: expiresAt, when: isUnknown)
        }
    }

    /// Writes durably, if `key`'s unsettled record still passes `when`, its
    /// completion (`completed`, kept until `expiresAt`) or its release
    /// (`nil`), and moves the key out of the unsettled table.
    private func settle(
        key: String, completing completed: KeyStoreRecord?, expiresAt: Date, when: @escaping @Sendable (KeyRecord) -> Bool
    ) async throws {
        let digest = digester.digest(key)
        var writes: [LogWrite] = [.tombstone(digest.unsettledKey)]
        if let completed { writes.insert(.value(digest.settledKey, completed.encoded(), expiresAt: expiresAt), at: 0) }
        let size = writes.reduce(0) { $0 + $1.frameSize }
        guard size <= configuration.maximumRecordSize else {
            throw IdempotencyKeyStoreError(
                .responseTooLarge, "a record of \(size) bytes exceeds the store's maximumRecordSize of \(configuration.maximumRecordSize)")
        }
        let submitted = try await submit(
            writes,
            unless: { unsettled -> Bool? in
                guard let record = unsettled[key], when(record) else { return false }
                return nil
            },
            then: { _ in })
        guard case .submitted(let ticket) = submitted else { return }
        do { try await ticket.wait(for: .durable) } catch { throw Self.storeError(error) }
        unsettled.withLock { unsettled in
            if let record = unsettled[key], when(record) { unsettled[key] = nil }
        }
    }

    public func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        unsettled.withLock { unsettled in
            unsettled.compactMap { $0.value.isExpired(at: now) ? nil : $0.value.unsettled(key: $0.key) }
        }
        .sorted { ($0.since, $0.key) < ($1.since, $1.key) }
        .prefix(max(0, limit)).map { $0 }
    }

    /// Forgets every key that expired at or before `now`: unsettled keys
    /// past their expiry, and every segment (oldest first) whose records all
    /// expired, with their files. Returns how many keys were forgotten.
    @discardableResult
    public func expire(now: Date) async throws -> Int {
        let forgotten = unsettled.withLock { unsettled in
            let before = unsettled.count
            unsettled = unsettled.filter { !$0.value.isExpired(at: now) }
            return before - unsettled.count
        }
        do {
            return forgotten + (try await log.removeExpired(now: now)).keysRemoved
        } catch {
            throw Self.storeError(error)
        }
    }

    // MARK: Inspection and life cycle

    /// Keys held: completed ones until retention removes their segment, and
    /// unsettled ones (a key completed, then claimed again after it expired,
    /// counts twice until then).
    public var count: Int { log.statistics.liveKeys }

    /// Bytes of log segments on disk.
    public var bytesOnDisk: Int64 { log.statistics.totalBytes }

    /// Log segments on disk (the active one included).
    public var segmentCount: Int { log.statistics.segments }

    /// Writes everything, syncs, and releases the directory. Idempotent.
    public func close() async throws {
        do { try await log.close() } catch { throw Self.storeError(error) }
    }
}
