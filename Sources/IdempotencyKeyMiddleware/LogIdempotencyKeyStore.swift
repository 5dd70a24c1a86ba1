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
    /// Keys not settled yet, and keys whose completed record is being read.
    let memory: Locked<KeyStoreMemory>
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
        self.memory = Locked(KeyStoreMemory(unsettled: unsettled))
        self.recovery = recovery
    }

    // MARK: IdempotencyKeyStore

    public func begin(key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws -> IdempotencyBeginResult {
        let digest = digester.digest(key)
        let reader: KeyRecord
        switch try lookup(key: key, digest: digest, fingerprint: fingerprint, now: now, claim: claim) {
        case .answer(let result): return result
        case .claim: return try await claimKey(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim)
        case .read(let holding): reader = holding
        }
        // Held in progress while its record is read: a concurrent request
        // with the key gets 409 meanwhile, never a second run.
        let entry: LogEntry?
        do {
            entry = try await log.get(digest.settledKey)
        } catch {
            memory.withLock { $0.stopReading(key, reader) }
            throw Self.storeError(error)
        }
        memory.withLock { $0.stopReading(key, reader) }
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

    private enum Lookup {
        case answer(IdempotencyBeginResult)
        case claim
        /// The key's completed record must be read; `reader` holds the key meanwhile.
        case read(KeyRecord)
    }

    /// Decides from memory, or says that the completed record must be read.
    /// The log's index is asked outside the memory's lock.
    private func lookup(key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) throws -> Lookup {
        while true {
            if let answer = memory.withLock({ decideFromMemory(key, digest: digest, fingerprint: fingerprint, now: now, claim: claim, &$0) }) {
                return answer
            }
            // No live unsettled record: a completed one may decide.
            guard log.contains(digest.settledKey) else { return .claim }
            let reader = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
            let holding = memory.withLock { memory -> Bool in
                // Another request got to the key in between: decide again.
                // An unsettled record still there must be one memory would
                // not answer from (expired, or a stale claim past its
                // expiry), as in `decideFromMemory`, or this loop would
                // never end.
                guard memory.reading[key] == nil else { return false }
                if let record = memory.unsettled[key],
                    KeyRecord.decide(record, key: key, fingerprint: fingerprint, now: now, claim: claim) != .claim
                {
                    return false
                }
                memory.reading[key] = reader
                return true
            }
            if holding { return .read(reader) }
        }
    }

    /// The answer memory gives, or `nil` if the log must decide.
    private func decideFromMemory(
        _ key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim, _ memory: inout KeyStoreMemory
    ) -> Lookup? {
        if let reader = memory.reading[key] {
            // Being read by another request: in progress for this one.
            return .answer(reader.fingerprint == fingerprint ? .inProgress : .fingerprintMismatch)
        }
        guard let record = memory.unsettled[key] else { return nil }
        switch KeyRecord.decide(record, key: key, fingerprint: fingerprint, now: now, claim: claim) {
        case .answer(let result): return .answer(result)
        case .claim: return nil
        case .abandonClaim(let stale):
            memory.unsettled[key]?.state = .outcomeUnknown(since: stale.since, expiresAt: stale.expiresAt, reason: .claimAbandoned)
            // Best effort, not waited for: memory answers from now on; if
            // the log cannot take it, the claim it holds reads as outcome
            // unknown after a restart anyway.
            let unknown = KeyStoreRecord.unknown(key: key, fingerprint: record.fingerprint, since: stale.since, reason: .claimAbandoned)
            _ = try? log.submit([.value(digest.unsettledKey, unknown.encoded(), expiresAt: stale.expiresAt)])
            return .answer(.outcomeUnknown(stale))
        }
    }

    /// Claims `key` durably, or refuses it at the cap.
    private func claimKey(_ key: String, digest: KeyDigest, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) async throws
        -> IdempotencyBeginResult
    {
        if capacityRefusal(now: now) != nil {
            // Only when a segment can go: a flood of new keys at the cap is
            // answered at once, not queued behind retention.
            if let next = log.statistics.nextRemovalAt, next <= now { try await expire(now: now) }
            if let seconds = capacityRefusal(now: now) { return .atCapacity(retryAfter: .seconds(seconds)) }
        }
        let record = KeyRecord(fingerprint: fingerprint, state: .inProgress(since: now, owner: claim.owner, expiresAt: claim.expiresAt))
        let write = LogWrite.value(
            digest.unsettledKey, KeyStoreRecord.claim(key: key, fingerprint: fingerprint, since: now, owner: claim.owner).encoded(),
            expiresAt: claim.expiresAt)
        let submitted = try await submit(
            [write],
            unless: { memory -> IdempotencyBeginResult? in
                // Another request may have claimed or be reading the key
                // since the lookup.
                guard let existing = memory.unsettled[key] ?? memory.reading[key],
                    case .answer(let answer) = KeyRecord.decide(existing, key: key, fingerprint: fingerprint, now: now, claim: claim)
                else { return nil }
                return answer
            },
            then: { $0.unsettled[key] = record })
        let ticket: LogTicket
        switch submitted {
        case .declined(let answer): return answer
        case .submitted(let submitted): ticket = submitted
        }
        do {
            try await ticket.wait(for: .durable)
        } catch {
            memory.withLock { memory in
                if memory.unsettled[key] == record { memory.unsettled[key] = nil }
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
