import Foundation

/// One key's record, as the in-memory store keeps it (and the durable store
/// keeps its unsettled keys; the PostgreSQL store decodes its rows into it,
/// so every store decides a request the same way).
package struct KeyRecord: Sendable, Hashable {
    package enum State: Sendable, Hashable {
        case inProgress(since: Date, owner: String, expiresAt: Date)
        case completed(StoredResponse, expiresAt: Date)
        case outcomeUnknown(since: Date, expiresAt: Date, reason: IdempotencyUnknownReason)
    }

    package var fingerprint: [UInt8]
    package var state: State

    package init(fingerprint: [UInt8], state: State) {
        self.fingerprint = fingerprint
        self.state = state
    }

    /// When the record may be forgotten.
    var expiresAt: Date {
        switch state {
        case .inProgress(_, _, let expiresAt), .completed(_, let expiresAt), .outcomeUnknown(_, let expiresAt, _): expiresAt
        }
    }

    /// Whether the record may be forgotten at `now`. An in-progress claim of
    /// a request still running is never forgotten by expiry alone: only the
    /// owner's middleware settles it (see ``KeyRecord/decide``).
    func isExpired(at now: Date) -> Bool {
        if case .inProgress = state { return false }
        return expiresAt <= now
    }

    /// The unsettled view of an outcome-unknown record.
    func unsettled(key: String) -> IdempotencyUnsettledKey? {
        guard case .outcomeUnknown(let since, let expiresAt, let reason) = state else { return nil }
        return IdempotencyUnsettledKey(key: key, since: since, expiresAt: expiresAt, reason: reason)
    }

    /// What a new request finds, given this record (or none).
    package enum Decision: Equatable {
        /// Answer with the result; the record stays as it is.
        case answer(IdempotencyBeginResult)
        /// Claim the key for the caller (record a new in-progress claim).
        case claim
        /// Another owner's claim went stale: record it as outcome unknown
        /// (reason ``IdempotencyUnknownReason/claimAbandoned``) and answer so.
        case abandonClaim(IdempotencyUnsettledKey)
    }

    /// The decision for a new request with `fingerprint`, given this record
    /// (or none).
    package static func decide(_ record: KeyRecord?, key: String, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim) -> Decision {
        guard let record else { return .claim }
        let same = record.fingerprint == fingerprint
        switch record.state {
        case .completed(let response, let expiresAt):
            if expiresAt <= now { return .claim }
            return .answer(same ? .completed(response) : .fingerprintMismatch)
        case .outcomeUnknown(let since, let expiresAt, let reason):
            if expiresAt <= now { return .claim }
            guard same else { return .answer(.fingerprintMismatch) }
            return .answer(.outcomeUnknown(IdempotencyUnsettledKey(key: key, since: since, expiresAt: expiresAt, reason: reason)))
        case .inProgress(let since, let owner, let expiresAt):
            // This process is still running it: never run it again alongside.
            if owner != claim.owner, now.timeIntervalSince(since) >= claim.staleAfter.seconds {
                // Its owner is gone, and its handler may have applied the
                // write: never run it again either.
                if expiresAt <= now { return .claim }
                guard same else { return .answer(.fingerprintMismatch) }
                return .abandonClaim(IdempotencyUnsettledKey(key: key, since: since, expiresAt: expiresAt, reason: .claimAbandoned))
            }
            return .answer(same ? .inProgress : .fingerprintMismatch)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Whole seconds, rounded up, at least `minimum`.
    func wholeSeconds(atLeast minimum: Int = 0) -> Int {
        max(minimum, Int(seconds.rounded(.up)))
    }
}
