import CLITestSupport
import Foundation
import Outbox
import PropertyBased
import Testing

/// Random operation sequences run in lockstep on the in-memory store (the
/// model) and the log store, reopening the log store at random: after every
/// step both must give the same answers.
@Suite("Store model", .propertySeedFromEnvironment)
struct StoreModelTests {
    typealias Step = StoreStep

    static let step = Gen<Step>.frequency(
        (6, zip(Gen.int(in: 0...3), Gen.int(in: 0...6), Gen.int(in: -1...1), Gen.int(in: 0...4)).map {
            Step.enqueue(scope: $0, parent: $1 < 5 ? $1 : nil, priority: $2, coalesce: $3 < 2 ? $3 : nil)
        }),
        (4, Gen.int(in: 0...5).map { Step.begin($0) }),
        (3, Gen.int(in: 0...5).map { Step.succeed($0) }),
        (2, Gen.int(in: 0...5).map { Step.fail($0) }),
        (1, Gen.int(in: 0...9).map { Step.quarantine($0) }),
        (1, Gen.int(in: 0...5).map { Step.conflict($0) }),
        (1, Gen.int(in: 0...9).map { Step.retry($0) }),
        (1, Gen.int(in: 0...9).map { Step.retryQuarantined($0) }),
        (1, Gen.int(in: 0...9).map { Step.discard($0) }),
        (2, Gen.int(in: 1...120).map { Step.advance(seconds: $0) }),
        (1, Gen.always(Step.reopen))
    )

    /// What both stores must agree on, sequence numbers aside (the log
    /// store's grow across reopens).
    struct View: Equatable, CustomStringConvertible {
        var id: OutboxEntry.ID
        var status: OutboxStatus
        var attempts: Int
        var nextAttemptAt: Date
        var lastFailure: OutboxFailure?
        var payload: [UInt8]
        var scope: String?
        var dependencies: [OutboxEntry.ID]
        var serverID: String?

        init(_ entry: OutboxEntry) {
            id = entry.id
            status = entry.status
            attempts = entry.attempts
            // A quarantined entry's time is when each store quarantined it (its own
            // wall clock, for the retention of quarantined entries): not compared.
            nextAttemptAt = entry.status == .quarantined
                ? .distantPast : Date(timeIntervalSince1970: (entry.nextAttemptAt.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
            lastFailure = entry.lastFailure
            payload = entry.payload
            scope = entry.scope
            dependencies = entry.dependencies
            serverID = entry.serverID
        }

        var description: String { "\(id.uuid.uuidString.prefix(8)):\(status)/\(attempts)" }
    }

    static func views(_ store: any OutboxStore) async throws -> [View] {
        try await store.entries(matching: .all).map(View.init)
    }

    @Test("the log store behaves exactly like the in-memory model, across reopens")
    func lockstep() async throws {
        await propertyCheck(count: modelCases(30), input: Self.step.array(of: 1...60)) { steps in
            let model = InMemoryOutboxStore(partition: "p", configuration: quietConfiguration())
            var subject = try await StoreUnderTest.make(.log, partition: "p")
            var now = Date(timeIntervalSince1970: 1_800_000_000)
            var known: [OutboxEntry.ID] = []
            var keys: [OutboxEntry.ID: String] = [:]

            for (index, step) in steps.enumerated() {
                let inFlight = try await model.entries(matching: OutboxFilter(statuses: [.inFlight])).map(\.id)
                let due = try await model.dueEntries(at: now, limit: 10).map(\.id)
                // Run the same call on both; they must both succeed or both fail alike.
                func both<T: Equatable>(_ call: (any OutboxStore) async throws -> T) async throws {
                    let expected: Result<T, OutboxError>
                    let actual: Result<T, OutboxError>
                    do { expected = .success(try await call(model)) } catch let error as OutboxError { expected = .failure(error) }
                    do { actual = .success(try await call(subject.store)) } catch let error as OutboxError { actual = .failure(error) }
                    switch (expected, actual) {
                    case (.success(let a), .success(let b)): #expect(a == b, "step \(index) \(step)")
                    case (.failure(let a), .failure(let b)): #expect(a.code == b.code, "step \(index) \(step): \(a) vs \(b)")
                    default: Issue.record("step \(index) \(step): model \(expected), log store \(actual)")
                    }
                }
                switch step {
                case .enqueue(let scope, let parent, let priority, let coalesce, _, _):
                    let id = modelEntryID(step: index)
                    let dependencies = parent.flatMap { known.indices.contains($0) ? [known[known.count - 1 - $0]] : nil } ?? []
                    let request = OutboxEnqueueRequest(
                        id: id, type: "t\(scope)", method: "POST", endpoint: "/things", payload: Array("\(index)".utf8),
                        scope: scope == 0 ? nil : "s\(scope)", dependencies: dependencies, priority: priority,
                        coalescingKey: coalesce.map { "c\($0)" }, maxAttempts: 3, createdAt: now)
                    try await both { store in
                        switch try await store.enqueue(request) {
                        case .enqueued: "enqueued"
                        case .coalesced(_, let replaced): "coalesced \(replaced)"
                        case .duplicate: "duplicate"
                        }
                    }
                    known.append(id)
                case .beginAny, .checkpoint, .compact:
                    continue  // not generated here
                case .begin(let n):
                    guard !due.isEmpty else { continue }
                    try await both { try await $0.beginAttempt(due[n % due.count], at: now, lease: .seconds(30)).attempts }
                case .succeed(let n):
                    guard !inFlight.isEmpty else { continue }
                    let id = inFlight[n % inFlight.count]
                    try await both { store -> Bool in
                        try await store.recordSuccess(id, serverID: "srv-\(index)", at: now)
                        return true
                    }
                case .fail(let n):
                    guard !inFlight.isEmpty else { continue }
                    let id = inFlight[n % inFlight.count]
                    try await both {
                        let outcome = try await $0.recordFailure(id, StoreStep.transientFailure, retryAt: now.addingTimeInterval(30))
                        return "\(outcome.status) \(outcome.cascade.dependents.sorted())"
                    }
                case .quarantine(let n), .retry(let n), .discard(let n), .conflict(let n):
                    guard !known.isEmpty else { continue }
                    let id = known[n % known.count]
                    try await both { store -> String in
                        switch step {
                        case .quarantine: return "\(try await store.quarantine(id, StoreStep.permanentFailure).dependents.sorted())"
                        case .retry: return "\(try await store.retry(id, at: now).dependents.sorted())"
                        case .discard: return "\(try await store.discard(id).dependents.sorted())"
                        default:
                            try await store.markConflict(id, StoreStep.conflictFailure)
                            return "conflict"
                        }
                    }
                case .retryQuarantined(let n):
                    let stopped = try await model.entries(matching: OutboxFilter(statuses: [.quarantined, .conflict])).map(\.id)
                    guard !stopped.isEmpty else { continue }
                    let id = stopped[n % stopped.count]
                    try await both { "\(try await $0.retry(id, at: now).dependents.sorted())" }
                case .advance(let seconds):
                    now = now.addingTimeInterval(Double(seconds))
                case .reopen:
                    guard inFlight.isEmpty else { continue }  // a restart would reset them in one store only
                    try await subject.reopen(now: now)
                }
                let expected = try await Self.views(model)
                let actual = try await Self.views(subject.store)
                #expect(expected == actual, "after step \(index) \(step)")
                #expect(try await model.dueIDs(at: now) == subject.store.dueIDs(at: now), "due after step \(index) \(step)")
                #expect(try await model.summary().counts == subject.store.summary().counts)
                // Idempotency keys never change once minted.
                for entry in try await subject.store.entries(matching: .all) {
                    if let key = keys[entry.id] { #expect(key == entry.idempotencyKey) }
                    keys[entry.id] = entry.idempotencyKey
                }
            }
            try await subject.close()
        }
    }
}
