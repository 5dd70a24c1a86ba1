import Foundation

/// One key's record, as the built-in stores keep it.
struct KeyRecord: Sendable, Hashable, Codable {
    enum State: Sendable, Hashable, Codable {
        case inProgress(since: Date, owner: String)
        case completed(StoredResponse, expiresAt: Date)
    }

    var fingerprint: [UInt8]
    var state: State

    /// When a completed record expires; `nil` while in progress.
    var expiresAt: Date? {
        if case .completed(_, let expiresAt) = state { return expiresAt }
        return nil
    }

    /// Whether the record is completed and expired at `now`.
    func isExpired(at now: Date) -> Bool { expiresAt.map { $0 <= now } ?? false }

    /// The decision for a new request, given this record (or none), and
    /// whether the caller must now hold the key as in progress for
    /// `claim.owner`.
    static func decide(
        _ record: KeyRecord?, fingerprint: [UInt8], now: Date, claim: IdempotencyClaim
    ) -> (IdempotencyBeginResult, claim: Bool) {
        guard let record else { return (.proceed, true) }
        switch record.state {
        case .completed(let response, let expiresAt):
            if expiresAt <= now { return (.proceed, true) }
            return record.fingerprint == fingerprint ? (.completed(response), false) : (.fingerprintMismatch, false)
        case .inProgress(let since, let owner):
            // This process is still running it: never run it again alongside.
            if owner != claim.owner, now.timeIntervalSince(since) >= claim.staleAfter.seconds { return (.proceed, true) }
            return record.fingerprint == fingerprint ? (.inProgress, false) : (.fingerprintMismatch, false)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
