import Foundation
import Hummingbird
import Logging
import OutboxLocking

extension IdempotencyMiddleware {
    /// Records how a request that ran ended: its response, or (if the store
    /// refuses that) a ``IdempotencyProblem/responseNotStored`` marker, or
    /// (if it refuses that too) outcome-unknown. Never releases the key: the
    /// handler ran, so running it again could apply the write twice.
    func settle(key: String, _ response: StoredResponse, logger: Logger) async {
        let now = configuration.now()
        let expiresAt = now.addingTimeInterval(configuration.retention.seconds)
        do {
            try await store.complete(key: key, response: response, now: now, expiresAt: expiresAt)
            return
        } catch {
            logger.error("cannot store idempotent response", metadata: ["key": "\(key)", "error": "\(error)"])
        }
        let marker = IdempotencyProblem.notStored(status: response.status, reason: "the key store could not keep its response")
        if response != marker {
            do {
                try await store.complete(key: key, response: marker, now: now, expiresAt: expiresAt)
                return
            } catch {
                logger.error("cannot store idempotent response marker", metadata: ["key": "\(key)", "error": "\(error)"])
            }
        }
        await settleUnknown(key: key, now: now, expiresAt: expiresAt, logger: logger)
    }

    /// Marks the key outcome-unknown in the store, or, if the store fails
    /// even that, remembers it here so repeats are answered so (and the
    /// store is asked again on the next one).
    private func settleUnknown(key: String, now: Date, expiresAt: Date, logger: Logger) async {
        do {
            try await store.settleUnknown(key: key, owner: configuration.serverInstance, now: now, expiresAt: expiresAt)
        } catch {
            logger.critical(
                "cannot record an idempotency key's unknown outcome; this process keeps it",
                metadata: ["key": "\(key)", "error": "\(error)"])
            settlements.record(key, .unknown(IdempotencyUnsettledKey(key: key, since: now, expiresAt: expiresAt, reason: .responseNotRecorded)))
        }
    }

    /// Releases the key after a request that applied nothing (threw or 5xx).
    func release(key: String, logger: Logger) async {
        do {
            try await store.abandon(key: key, owner: configuration.serverInstance)
        } catch {
            logger.error("cannot release an idempotency claim; this process retries on the next request", metadata: ["key": "\(key)", "error": "\(error)"])
            settlements.record(key, .release)
        }
    }

    /// Retries a settlement the store failed earlier for `key`. Returns the
    /// answer if the key cannot be claimed yet; `nil` once the store holds
    /// the settlement (the request then goes on to `begin`).
    func settlePending(key: String, now: Date, logger: Logger) async -> Response? {
        guard let pending = settlements.pending(key) else { return nil }
        let owner = configuration.serverInstance
        switch pending {
        case .release:
            do {
                try await store.abandon(key: key, owner: owner)
                settlements.remove(key)
                return nil
            } catch {
                return IdempotencyProblem.storeUnavailable.response(
                    detail: "The idempotency key store cannot record this request right now, so it was not run. Retry with the same key.",
                    retryAfter: configuration.unavailableRetryAfter)
            }
        case .unknown(let unsettled):
            do {
                if unsettled.expiresAt <= now {
                    try await store.abandon(key: key, owner: owner)
                } else {
                    try await store.settleUnknown(key: key, owner: owner, now: now, expiresAt: unsettled.expiresAt)
                }
                settlements.remove(key)
                return nil
            } catch {
                return IdempotencyProblem.outcomeUnknown(unsettled, retryAfter: configuration.outcomeUnknownRetryAfter)
            }
        }
    }
}

/// Settlements the key store failed to record, kept by the middleware until
/// the store takes them. Only needed for stores that can fail outright (a
/// database that is down); the built-in stores always hold a settlement in
/// memory. Bounded: past ``limit`` the oldest is dropped, which is safe —
/// the store still holds this process's claim, answered 409 "in progress"
/// (never run again) until the process restarts.
final class PendingSettlements: Sendable {
    enum Action: Sendable, Hashable {
        /// Release the claim (the handler applied nothing).
        case release
        /// Mark the key outcome-unknown.
        case unknown(IdempotencyUnsettledKey)
    }

    static let limit = 10_000
    private let state = Locked<(actions: [String: Action], order: [String])>(([:], []))

    func record(_ key: String, _ action: Action) {
        state.withLock { state in
            if state.actions.updateValue(action, forKey: key) == nil { state.order.append(key) }
            while state.order.count > Self.limit { state.actions[state.order.removeFirst()] = nil }
        }
    }

    func pending(_ key: String) -> Action? {
        state.withLock { $0.actions.isEmpty ? nil : $0.actions[key] }
    }

    func remove(_ key: String) {
        state.withLock { state in
            if state.actions.removeValue(forKey: key) != nil { state.order.removeAll { $0 == key } }
        }
    }

    var count: Int { state.withLock { $0.actions.count } }
}
