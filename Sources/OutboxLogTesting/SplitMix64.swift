/// A small, fast, seeded pseudo-random number generator (Steele, Lea and
/// Flood's SplitMix64), used wherever a crash test needs randomness that can
/// be replayed: power-loss outcomes, random fault triggers, torn writes, and
/// the torture driver's workload.
///
/// The same seed always produces the same sequence, on every platform and
/// every toolchain. To keep that promise, the helpers below
/// (``next(below:)``, ``next(in:)``, ``nextBool(probability:)``) use their
/// own fixed algorithms instead of the standard library's
/// `Int.random(in:using:)`, whose algorithm is an implementation detail that
/// may change between Swift releases. Code that must replay a failure from a
/// seed should use these helpers.
///
/// Not suitable for cryptography.
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    /// The generator's whole state: copy the generator to fork the sequence.
    public private(set) var state: UInt64

    /// Creates a generator whose sequence is fully determined by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 uniformly distributed bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// A uniformly distributed integer in `0..<bound` (`bound` must be > 0),
    /// without modulo bias (Lemire's multiply-and-reject method).
    public mutating func next(below bound: Int) -> Int {
        precondition(bound > 0, "bound must be positive")
        let limit = UInt64(bound)
        var product = next().multipliedFullWidth(by: limit)
        if product.low < limit {
            let threshold = (0 &- limit) % limit
            while product.low < threshold {
                product = next().multipliedFullWidth(by: limit)
            }
        }
        return Int(product.high)
    }

    /// A uniformly distributed integer in `range`.
    public mutating func next(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + next(below: range.upperBound - range.lowerBound + 1)
    }

    /// `true` with the given probability (clamped to `0...1`).
    public mutating func nextBool(probability: Double = 0.5) -> Bool {
        if probability <= 0 { return false }
        if probability >= 1 { return true }
        // 53 random bits give a uniform double in [0, 1).
        let unit = Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
        return unit < probability
    }

    /// `count` uniformly random bytes.
    public mutating func nextBytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            var word = next()
            for _ in 0..<min(8, count - bytes.count) {
                bytes.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return bytes
    }

    /// An independent generator for sub-stream `stream` of `seed`.
    ///
    /// Derived generators let each file, directory or worker draw from its
    /// own sequence, so that adding one file to a test does not change the
    /// random choices made for every other file. (Seeding with
    /// `seed + stream` would not do: SplitMix64 sequences of nearby seeds
    /// are shifted copies of one another.)
    public static func derived(seed: UInt64, stream: UInt64) -> SplitMix64 {
        SplitMix64(seed: mix(seed ^ mix(stream &+ 0x6A09_E667_F3BC_C909)))
    }

    /// SplitMix64's finalizer: a bijective avalanche of 64 bits.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
