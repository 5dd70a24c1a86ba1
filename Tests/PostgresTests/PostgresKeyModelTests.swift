import Foundation
import IdempotencyKeyMiddleware
import IdempotencyKeyPostgres
import Testing

/// The PostgreSQL store against the in-memory one as a model: random
/// sequences of what middlewares on several servers do (claims by two live
/// servers and by servers that die mid-request, completions, releases,
/// unknown outcomes, operators' resolutions, sweeps, time passing) must get
/// the same answers from both.
@Suite(
    "PostgreSQL key store against the in-memory model", .serialized, .timeLimit(.minutes(5)),
    .needsPostgres)
struct PostgresKeyModelTests {
    /// SplitMix64: the sequence is reproducible from its seed.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    @Test("the same answers as the model, step by step", arguments: [1, 2, 3] as [UInt64])
    func agreesWithModel(seed: UInt64) async throws {
        try await PostgresTestDatabase.withStore(configure: {
            // The operator's listing marks stale claims itself, and sweeps
            // delete expired stale ones; the model does neither.
            $0.staleAfter = .seconds(86_400 * 365)
        }) { store, _ in
            let model = InMemoryIdempotencyKeyStore()
            var random = Random(state: seed)
            var now = Date(timeIntervalSince1970: 1_900_000_000)
            let keys = ["a", "b", "c", "d"]
            let retention: TimeInterval = 300
            var step = 0
            func check<T: Equatable>(_ what: String, _ real: T, _ expected: T) {
                #expect(real == expected, "seed \(seed), step \(step): \(what)")
            }
            for index in 0..<300 {
                step = index
                let key = keys[random.next(keys.count)]
                switch random.next(10) {
                case 0..<6:
                    // A request: two live servers, or one that dies mid-request.
                    let outcome = random.next(5)
                    let owner = outcome == 4 ? "dead-\(index)" : "live-\(random.next(2))"
                    let claim = IdempotencyClaim(owner: owner, staleAfter: .seconds(60), expiresAt: now.addingTimeInterval(retention))
                    let fingerprint: [UInt8] = [UInt8(random.next(2))]
                    let real = try await store.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
                    let expected = try await model.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
                    check("begin \(key) by \(owner)", real, expected)
                    guard real == .proceed, expected == .proceed else { continue }
                    let response = StoredResponse(status: 201, headers: ["content-type": "text/plain"], body: Array("\(index)".utf8))
                    switch outcome {
                    case 0, 1:
                        try await store.complete(key: key, response: response, now: now, expiresAt: now.addingTimeInterval(retention))
                        try await model.complete(key: key, response: response, now: now, expiresAt: now.addingTimeInterval(retention))
                    case 2:
                        try await store.abandon(key: key, owner: owner)
                        try await model.abandon(key: key, owner: owner)
                    case 3:
                        try await store.settleUnknown(key: key, owner: owner, now: now, expiresAt: now.addingTimeInterval(retention))
                        try await model.settleUnknown(key: key, owner: owner, now: now, expiresAt: now.addingTimeInterval(retention))
                    default:
                        break  // died: the claim stays
                    }
                case 6:
                    now = now.addingTimeInterval(Double(random.next(90)))
                case 7:
                    let resolution: IdempotencyResolution = random.next(2) == 0
                        ? .notApplied
                        : .applied(StoredResponse(status: 200, headers: [:], body: [1]), expiresAt: now.addingTimeInterval(retention))
                    let real = await Result(catching: { try await store.resolve(key: key, as: resolution, now: now) })
                    let expected = await Result(catching: { try await model.resolve(key: key, as: resolution, now: now) })
                    check("resolve \(key) succeeded", (try? real.get()) != nil, (try? expected.get()) != nil)
                case 8:
                    check("unsettled keys", try await store.unsettledKeys(now: now, limit: 10), try await model.unsettledKeys(now: now, limit: 10))
                default:
                    // Sweeps delete the same keys: an in-progress claim is deleted
                    // only once stale too (here never: staleAfter is a year), as the
                    // model never deletes one.
                    check("expire", try await store.expire(now: now), try await model.expire(now: now))
                }
            }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
