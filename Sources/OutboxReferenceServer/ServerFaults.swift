import Foundation
import Synchronization

/// Faults the reference server injects, each with a probability per request.
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
    /// The answer is slow but in time.
    public var slow = 0.0
    public var slowDelay: Duration = .milliseconds(200)
    /// Seeds the fault draws (the same seed draws the same faults in order).
    public var seed: UInt64 = 1

    public init() {}

    /// `rate` spread over every kind of fault.
    public static func mixed(rate: Double, seed: UInt64 = 1) -> ServerFaults {
        var faults = ServerFaults()
        faults.serverError = rate * 0.3
        faults.tooManyRequests = rate * 0.2
        faults.delayPastTimeout = rate * 0.15
        faults.dropAfterApply = rate * 0.2
        faults.slow = rate * 0.15
        faults.seed = seed
        return faults
    }

    public enum Fault: String, Sendable, Hashable, Codable, CaseIterable {
        case serverError, tooManyRequests, delayPastTimeout, dropAfterApply, slow
    }
}

/// Draws faults from a seeded generator and counts them.
final class FaultDraw: Sendable {
    let faults: ServerFaults
    private let state: Mutex<(random: UInt64, counts: [ServerFaults.Fault: Int])>

    init(_ faults: ServerFaults) {
        self.faults = faults
        state = Mutex((faults.seed, [:]))
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
