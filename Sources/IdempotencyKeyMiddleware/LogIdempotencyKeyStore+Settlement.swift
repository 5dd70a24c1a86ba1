import Foundation
import OutboxLog

/// Settling claimed keys: a response, a release, an unknown outcome, an
/// operator's resolution; and expiry.
extension LogIdempotencyKeyStore {
    public func complete(key: String, response: StoredResponse, now: Date, expiresAt: Date) async throws {
        guard let fingerprint = memory.withLock({ memory -> [UInt8]? in
            guard case .inProgress = memory.unsettled[key]?.state else { return nil }
            return memory.unsettled[key]?.fingerprint
        }) else { return }
        let record = KeyStoreRecord.completed(key: key, fingerprint: fingerprint, response: response)
        try await settle(key: key, completing: record, expiresAt: expiresAt) { if case .inProgress = $0.state { true } else { false } }
    }

    public func abandon(key: String, owner: String) async throws {
        let digest = digester.digest(key)
        let release: (inout KeyStoreMemory) -> Void = { memory in
            if case .inProgress(_, let holder, _) = memory.unsettled[key]?.state, holder == owner { memory.unsettled[key] = nil }
        }
        let submitted: Submission<Bool>
        do {
            submitted = try await submit(
                [.tombstone(digest.unsettledKey)],
                unless: { memory -> Bool? in
                    guard case .inProgress(_, let holder, _) = memory.unsettled[key]?.state, holder == owner else { return false }
                    return nil
                },
                then: release)
        } catch {
            // Released in memory all the same: the claim the log holds reads
            // as outcome unknown after a restart, never as a second run.
            memory.withLock { release(&$0) }
            throw error
        }
        // Not waited for durably: a release lost in a crash leaves the claim,
        // answered outcome-unknown after the restart — never a second run.
        if case .submitted(let ticket) = submitted {
            do { try await ticket.wait(for: .written) } catch { throw Self.storeError(error) }
        }
    }

    public func settleUnknown(key: String, owner: String, now: Date, expiresAt: Date) async throws {
        let digest = digester.digest(key)
        guard let record = memory.withLock({ $0.unsettled[key] }), case .inProgress(let since, let holder, _) = record.state, holder == owner
        else { return }
        let write = LogWrite.value(
            digest.unsettledKey,
            KeyStoreRecord.unknown(key: key, fingerprint: record.fingerprint, since: since, reason: .responseNotRecorded).encoded(),
            expiresAt: expiresAt)
        let settleInMemory: (inout KeyStoreMemory) -> Void = { memory in
            guard let current = memory.unsettled[key], case .inProgress(_, let holder, _) = current.state, holder == owner else { return }
            memory.unsettled[key]?.state = .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .responseNotRecorded)
        }
        let submitted: Submission<Bool>
        do {
            submitted = try await submit(
                [write],
                unless: { memory -> Bool? in
                    guard let current = memory.unsettled[key], case .inProgress(_, let holder, _) = current.state, holder == owner else {
                        return false
                    }
                    return nil
                },
                then: settleInMemory)
        } catch {
            // Held in memory even when the log cannot take it (the protocol's
            // promise): the key answers outcome-unknown until a restart.
            memory.withLock { settleInMemory(&$0) }
            throw error
        }
        if case .submitted(let ticket) = submitted {
            do { try await ticket.wait(for: .durable) } catch { throw Self.storeError(error) }
        }
    }

    public func resolve(key: String, as resolution: IdempotencyResolution, now: Date) async throws {
        guard let record = memory.withLock({ $0.unsettled[key] }), case .outcomeUnknown(_, let expiresAt, _) = record.state, expiresAt > now
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
    /// (`nil`), and then moves that very record out of the unsettled table
    /// (not a newer one taken meanwhile).
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
        var settled: KeyRecord?
        let submitted = try await submit(
            writes,
            unless: { memory -> Bool? in
                guard let record = memory.unsettled[key], when(record) else { return false }
                settled = record
                return nil
            },
            then: { _ in })
        guard case .submitted(let ticket) = submitted else { return }
        do { try await ticket.wait(for: .durable) } catch { throw Self.storeError(error) }
        memory.withLock { memory in
            if let settled, memory.unsettled[key] == settled { memory.unsettled[key] = nil }
        }
    }

    public func unsettledKeys(now: Date, limit: Int) async throws -> [IdempotencyUnsettledKey] {
        memory.withLock { memory in
            memory.unsettled.compactMap { $0.value.isExpired(at: now) ? nil : $0.value.unsettled(key: $0.key) }
        }
        .sorted { ($0.since, $0.key) < ($1.since, $1.key) }
        .prefix(max(0, limit)).map { $0 }
    }

    /// Forgets what expired at or before `now`: unsettled keys past their
    /// expiry (a claim whose request is still running stays), and every
    /// segment, oldest first, whose records all expired. Returns how many
    /// keys were forgotten: those unsettled keys, and the keys whose records
    /// went with the segments.
    @discardableResult
    public func expire(now: Date) async throws -> Int {
        let forgotten = memory.withLock { memory in
            let before = memory.unsettled.count
            memory.unsettled = memory.unsettled.filter { !$0.value.isExpired(at: now) }
            return before - memory.unsettled.count
        }
        do {
            return forgotten + (try await log.removeExpired(now: now)).keysRemoved
        } catch {
            throw Self.storeError(error)
        }
    }
}
