import Foundation
import OutboxLocking

/// Faults the reference server injects into write requests, each with a
/// probability per request (at most one fault per request).
///
/// Every fault is decided in front of the idempotency middleware, so a 503
/// or a 429 never claims a key, and "after apply" faults disturb a response
/// that is already stored. ``slowApply`` alone acts behind it, inside the
/// handler, while the key is in progress.
public struct ServerFaults: Sendable, Hashable, Codable {
    /// 503 before the request is applied.
    public var serverError = 0.0
    /// 429 with `Retry-After`, before the request is applied.
    public var tooManyRequests = 0.0
    /// The `Retry-After` seconds of a 429.
    public var retryAfterSeconds = 1
    /// The request is applied, then the answer is held past the client's
    /// timeout: the client sees a timeout for a write that happened.
    public var delayPastTimeout = 0.0
    /// How long such an answer is held.
    public var timeoutDelay: Duration = .milliseconds(1500)
    /// The request is applied, then the connection is dropped: the response is lost.
    public var dropAfterApply = 0.0
    /// The answer is slow but in time (held before the idempotency
    /// middleware, so the key is not claimed yet).
    public var slow = 0.0
    /// How long a slow answer is held.
    public var slowDelay: Duration = .milliseconds(200)
    /// The API handler itself is slow: the key is claimed (in progress)
    /// while it works, then the write is applied and the answer sent. With
    /// ``slowApplyDelay`` past the client's timeout, the client's retry with
    /// the same key meets 409 + `Retry-After` while the first still runs,
    /// and a later retry gets the stored response replayed. The only fault
    /// that reaches the middleware's in-progress path.
    public var slowApply = 0.0
    /// How long the handler works before applying the write. It finishes
    /// even if the client has gone.
    public var slowApplyDelay: Duration = .seconds(2)
    /// Seeds the fault draws (the same seed draws the same faults in order).
    public var seed: UInt64 = 1

    public init() {}

    /// `rate` spread over 503s, 429s, answers held past the timeout,
    /// dropped connections, slow answers and slow applies (whose retries
    /// meet 409 + `Retry-After` while the first request still runs: a client
    /// must treat that as transient, as `HTTPOutboxHandler` does).
    public static func mixed(rate: Double, seed: UInt64 = 1) -> ServerFaults {
        var faults = ServerFaults()
        faults.serverError = rate * 0.25
        faults.tooManyRequests = rate * 0.2
        faults.delayPastTimeout = rate * 0.15
        faults.dropAfterApply = rate * 0.2
        faults.slow = rate * 0.1
        faults.slowApply = rate * 0.1
        faults.seed = seed
        return faults
    }

    public enum Fault: String, Sendable, Hashable, Codable, CaseIterable {
        case serverError, tooManyRequests, delayPastTimeout, dropAfterApply, slow, slowApply
    }
}

/// Draws faults from a seeded generator and counts them.
final class FaultDraw: Sendable {
    let faults: ServerFaults
    private let state: Locked<(random: UInt64, counts: [ServerFaults.Fault: Int])>

    init(_ faults: ServerFaults) {
        self.faults = faults
        state = Locked((faults.seed, [:]))
    }

    func next() -> ServerFaults.Fault? {
        state.withLock { state in
            state.random &+= 0x9E37_79B9_7F4A_7C15
            var z = state.random
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            var roll = Double(z >> 11) / Double(1 << 53)
            for (fault, rate) in [
                (ServerFaults.Fault.serverError, faults.serverError), (.tooManyRequests, faults.tooManyRequests),
                (.delayPastTimeout, faults.delayPastTimeout), (.dropAfterApply, faults.dropAfterApply), (.slow, faults.slow),
                (.slowApply, faults.slowApply),
            ] {
                if roll < rate {
                    state.counts[fault, default: 0] += 1
                    return fault
                }
                roll -= rate
            }
            return nil
        }
    }

    var counts: [ServerFaults.Fault: Int] { state.withLock { $0.counts } }
}
