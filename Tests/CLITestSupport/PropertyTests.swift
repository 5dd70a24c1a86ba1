import Foundation
import PropertyBased
import Testing

/// How many random cases a property test runs: `count`, unless the
/// `OUTBOX_MODEL_CASES` environment variable asks for another number (a
/// soak run: `OUTBOX_MODEL_CASES=5000 swift test --filter ModelTests`).
public func modelCases(_ count: Int) -> Int {
    ProcessInfo.processInfo.environment["OUTBOX_MODEL_CASES"].flatMap(Int.init).map { max($0, 1) } ?? count
}

/// Replays a failing case of a property test from the environment.
///
/// swift-property-based draws a fresh seed for every case and, when a case
/// fails, prints it: "Add `.fixedSeed("…")` to the Test to reproduce this
/// issue". With this trait on the suite, the same string in
/// `OUTBOX_PROPERTY_SEED` does it without editing the test:
///
/// ```sh
/// OUTBOX_PROPERTY_SEED='…' swift test --filter 'StoreModelTests/agreesWithModel'
/// ```
///
/// Every `propertyCheck` of each test then runs that one case, and, as with
/// `.fixedSeed`, the library records an issue if it passes (the property
/// was not tested fully): filter the run to the failed test. Unset (the
/// normal run), the trait does nothing.
public struct PropertySeedFromEnvironment: TestTrait, SuiteTrait, TestScoping {
    /// The environment variable that holds the seed to replay.
    public static let environmentVariable = "OUTBOX_PROPERTY_SEED"

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard let text = ProcessInfo.processInfo.environment[Self.environmentVariable], !text.isEmpty else {
            return try await function()
        }
        guard let state = Xoshiro(seed: text)?.currentState else {
            Issue.record(
                "\(Self.environmentVariable)=\(text) is not a seed printed by a property test (base64 of 32 bytes)",
                sourceLocation: test.sourceLocation)
            return
        }
        print("\(test.name): replaying the property seed \(text) from \(Self.environmentVariable)")
        await FixedSeedTrait.fixedSeed(state.0, state.1, state.2, state.3)
            .provideScope(for: test, testCase: testCase, performing: function)
    }
}

extension Trait where Self == PropertySeedFromEnvironment {
    /// Replays the property seed in `OUTBOX_PROPERTY_SEED`, if set (see
    /// ``PropertySeedFromEnvironment``).
    public static var propertySeedFromEnvironment: Self { Self() }
}
