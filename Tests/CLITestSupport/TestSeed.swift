import Foundation
import Testing

/// The seed of the tests that draw their own random values, so that a
/// failure can be replayed: `OUTBOX_TEST_SEED` when it is set, a fresh one
/// otherwise (one per test process). Every test that takes it prints it.
///
/// ```sh
/// OUTBOX_TEST_SEED=1234 swift test --filter DispatcherContractTests/backoffCap
/// ```
///
/// Property tests (swift-property-based) draw a seed per case and print the
/// failing case's; ``PropertySeedFromEnvironment`` replays it.
public enum TestSeed {
    /// The environment variable that fixes the seed.
    public static let environmentVariable = "OUTBOX_TEST_SEED"

    /// The environment's seed, or why it is unusable.
    enum Source: Sendable {
        case environment(UInt64)
        case drawn(UInt64)
        case unusable(String, drawn: UInt64)
    }

    /// Drawn in `0...Int64.max`, so that it is also a valid
    /// `outbox torture --seed`.
    static let source: Source = {
        let drawn = UInt64.random(in: 0...UInt64(Int64.max))
        guard let text = ProcessInfo.processInfo.environment[environmentVariable], !text.isEmpty else {
            return .drawn(drawn)
        }
        guard let seed = UInt64(text) else { return .unusable(text, drawn: drawn) }
        return .environment(seed)
    }()

    /// This process's seed, printed with the name of the test that takes
    /// it (`test`, the calling function by default) and how to replay it.
    /// An `OUTBOX_TEST_SEED` that is not a decimal `UInt64` is an issue of
    /// that test, which then runs with a drawn seed.
    public static func take(for test: String = #function, sourceLocation: SourceLocation = #_sourceLocation) -> UInt64 {
        let seed: UInt64
        switch source {
        case .environment(let value):
            seed = value
        case .drawn(let value):
            seed = value
        case .unusable(let text, let value):
            Issue.record("\(environmentVariable)=\(text) is not a seed (a decimal UInt64)", sourceLocation: sourceLocation)
            seed = value
        }
        print("\(test): seed \(seed) (replay with \(environmentVariable)=\(seed))")
        return seed
    }
}
