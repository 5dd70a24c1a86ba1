import Foundation

/// Exponential backoff with full jitter (AWS's "Exponential Backoff and
/// Jitter"): the wait before attempt n+1 is uniform in
/// `0 ... min(cap, base · 2^(n−1))`, so a crowd of clients that failed
/// together does not retry together. A server's `Retry-After` overrides it.
public struct OutboxBackoff: Sendable, Hashable {
    public var base: Duration
    public var cap: Duration

    public init(base: Duration = .seconds(1), cap: Duration = .seconds(300)) {
        self.base = base
        self.cap = cap
    }

    /// The delay after `attempts` attempts (at least 1), drawn with `random`.
    public func delay(afterAttempt attempts: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(attempts, 1) - 1, 40)
        let ceiling = min(Self.seconds(cap), Self.seconds(base) * pow(2, Double(exponent)))
        guard ceiling > 0 else { return .zero }
        return .milliseconds(Int64((Double.random(in: 0...ceiling, using: &random) * 1000).rounded()))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Backoff jitter: seeded (tests) or from the system.
struct JitterRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    private let system: Bool

    init(seed: UInt64?) {
        state = seed ?? 0
        system = seed == nil
    }

    mutating func next() -> UInt64 {
        if system {
            var generator = SystemRandomNumberGenerator()
            return generator.next()
        }
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
