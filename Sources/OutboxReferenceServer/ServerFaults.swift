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

    // Connection-level faults: what a crash, a load balancer or a mobile
    // network does to the connection itself.

    /// The connection is closed before the request is applied and before
    /// any response byte: nothing happened, the client hears nothing.
    public var closeBeforeResponse = 0.0
    /// The request is applied, then the connection is reset (RST, not FIN).
    public var resetAfterApply = 0.0
    /// The request is applied, then the server does not answer and keeps
    /// the connection open (half-open) for ``halfOpenHold``, then closes it:
    /// the client must time out.
    public var halfOpen = 0.0
    /// How long a half-open connection is held. Longer than the client's
    /// request timeout (30 s by default); bounded, so stopping the server
    /// never waits on a client that keeps its end open.
    public var halfOpenHold: Duration = .seconds(35)
    /// Answered normally, then the connection is closed while idle in the
    /// client's keep-alive pool (without `Connection: close`), after
    /// ``idleCloseDelay``: the next request on it races the close.
    public var idleClose = 0.0
    public var idleCloseDelay: Duration = .milliseconds(5)
    /// The request is applied and answered `303 See Other` (with its body
    /// and a `Location`): a redirect after a write, which counts as
    /// delivered and must never be followed.
    public var seeOther = 0.0
    /// Seeds the fault draws (the same seed draws the same faults in order).
    public var seed: UInt64 = 1

    public init() {}

    /// `rate` spread over 503s, 429s, answers held past the timeout,
    /// dropped connections, slow answers, slow applies (whose retries meet
    /// 409 + `Retry-After` while the first request still runs: a client must
    /// poll, as `HTTPOutboxHandler` does), and the connection-level faults:
    /// closed before the response, reset after apply, half-open, idle
    /// keep-alive connections closed by the server, and 303 redirects.
    public static func mixed(rate: Double, seed: UInt64 = 1) -> ServerFaults {
        var faults = ServerFaults()
        faults.serverError = rate * 0.2
        faults.tooManyRequests = rate * 0.1
        faults.delayPastTimeout = rate * 0.1
        faults.dropAfterApply = rate * 0.15
        faults.slow = rate * 0.05
        faults.slowApply = rate * 0.05
        faults.closeBeforeResponse = rate * 0.1
        faults.resetAfterApply = rate * 0.1
        faults.halfOpen = rate * 0.05
        faults.idleClose = rate * 0.05
        faults.seeOther = rate * 0.05
        faults.seed = seed
        return faults
    }

    public enum Fault: String, Sendable, Hashable, Codable, CaseIterable {
        case serverError, tooManyRequests, delayPastTimeout, dropAfterApply, slow, slowApply
        case closeBeforeResponse, resetAfterApply, halfOpen, idleClose, seeOther
    }

    /// Sets the probability of `fault`.
    public mutating func set(_ fault: Fault, to rate: Double) {
        switch fault {
        case .serverError: serverError = rate
        case .tooManyRequests: tooManyRequests = rate
        case .delayPastTimeout: delayPastTimeout = rate
        case .dropAfterApply: dropAfterApply = rate
        case .slow: slow = rate
        case .slowApply: slowApply = rate
        case .closeBeforeResponse: closeBeforeResponse = rate
        case .resetAfterApply: resetAfterApply = rate
        case .halfOpen: halfOpen = rate
        case .idleClose: idleClose = rate
        case .seeOther: seeOther = rate
        }
    }

    /// The probability of `fault`.
    public func rate(of fault: Fault) -> Double {
        switch fault {
        case .serverError: serverError
        case .tooManyRequests: tooManyRequests
        case .delayPastTimeout: delayPastTimeout
        case .dropAfterApply: dropAfterApply
        case .slow: slow
        case .slowApply: slowApply
        case .closeBeforeResponse: closeBeforeResponse
        case .resetAfterApply: resetAfterApply
        case .halfOpen: halfOpen
        case .idleClose: idleClose
        case .seeOther: seeOther
        }
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
            for fault in ServerFaults.Fault.allCases {
                let rate = faults.rate(of: fault)
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
