import CLITestSupport
import Foundation
import Outbox
import PropertyBased
import Testing

/// Random operation sequences on the in-memory store and on
/// ``ReferenceOutbox``, the rules written out naively: after every step they
/// must agree on every status, attempt count and the send order. The store
/// model test (`StoreModelTests`) checks persistence against this same
/// store; this one checks the scheduling rules themselves.
@Suite("Scheduling rules against a reference model", .propertySeedFromEnvironment)
struct SchedulingModelTests {
    typealias Step = StoreStep

    /// `parent` counts back from the newest known entry, so an entry often
    /// depends on one enqueued just before it — behind an older entry of the
    /// same scope that a coalescing enqueue may replace.
    static let step = Gen<Step>.frequency(
        (6, zip(Gen.int(in: 0...3), Gen.int(in: 0...9), Gen.int(in: -1...1), Gen.int(in: 0...5), Gen.int(in: 0...19)).map {
            Step.enqueue(
                scope: $0, parent: $1 < 3 ? 0 : $1 < 6 ? $1 - 2 : nil, priority: $2, coalesce: $3 < 3 ? $3 % 2 : nil,
                duplicateOf: $4 == 0 ? $1 : nil)
        }),
        // A quarantined or conflicting entry brought back while another entry of
        // its scope may be in flight.
        (2, Gen.int(in: 0...9).map { Step.retryQuarantined($0) }),
        (4, Gen.int(in: 0...5).map { Step.begin($0) }),
        (1, Gen.int(in: 0...9).map { Step.beginAny($0) }),
        (3, Gen.int(in: 0...5).map { Step.succeed($0) }),
        (2, Gen.int(in: 0...5).map { Step.fail($0) }),
        (1, Gen.int(in: 0...9).map { Step.quarantine($0) }),
        (1, Gen.int(in: 0...5).map { Step.conflict($0) }),
        (1, Gen.int(in: 0...9).map { Step.retry($0) }),
        (1, Gen.int(in: 0...9).map { Step.discard($0) }),
        (2, Gen.int(in: 1...90).map { Step.advance(seconds: $0) })
    )

    /// The same call's result on both sides, in comparable words.
    static func outcome<T>(_ body: () async throws -> T) async -> String {
        do {
            return "ok \(try await body())"
        } catch let error as OutboxError {
            switch error.code {
            case .notFound: return "notFound"
            case .invalidTransition: return "invalidTransition"
            case .unknownDependency: return "unknownDependency"
            case .invalidArgument: return "invalidArgument"
            default: return "error \(error.code)"
            }
        } catch let failure as ReferenceOutbox.Failure {
            return "\(failure)"
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test("statuses, attempts, cascades and the send order follow the written rules")
    func agreesWithReference() async throws {
        await propertyCheck(count: modelCases(300), input: Self.step.array(of: 1...100)) { steps in
            let store = InMemoryOutboxStore(partition: "p", configuration: quietConfiguration())
            var reference = ReferenceOutbox()
            var now = Date(timeIntervalSince1970: 1_800_000_000)
            var known: [OutboxEntry.ID] = []

            for (index, step) in steps.enumerated() {
                let inFlight = reference.entries.values.filter { $0.status == .inFlight }.map(\.id).sorted()
                let due = reference.due(at: now)
                let expected: String
                let actual: String
                switch step {
                case .enqueue(let scope, let parent, let priority, let coalesce, let duplicateOf, _):
                    let id = duplicateOf.flatMap { known.indices.contains($0) ? known[$0] : nil } ?? modelEntryID(step: index)
                    let parentID = parent.flatMap { known.indices.contains($0) ? known[known.count - 1 - $0] : nil }
                    let scopeName = scope == 0 ? nil : "s\(scope)"
                    let key = coalesce.map { "c\($0)" }
                    expected = await Self.outcome {
                        try reference.enqueue(
                            id, priority: priority, scope: scopeName, parent: parentID, coalescingKey: key, maxAttempts: 2)
                    }
                    actual = await Self.outcome { () -> ReferenceOutbox.Enqueued in
                        let request = OutboxEnqueueRequest(
                            id: id, type: "t", method: "POST", endpoint: "/x", payload: Array("\(index)".utf8),
                            scope: scopeName, dependencies: parentID.map { [$0] } ?? [], priority: priority,
                            coalescingKey: key, maxAttempts: 2, createdAt: now)
                        switch try await store.enqueue(request) {
                        case .enqueued: return .enqueued
                        case .duplicate: return .duplicate
                        case .coalesced(_, let replaced): return .coalesced(replaced: replaced)
                        }
                    }
                    if !known.contains(id) { known.append(id) }
                case .begin(let n), .beginAny(let n):
                    // Due entries, or any entry (most of which may not start).
                    let pool: [OutboxEntry.ID]
                    if case .begin = step { pool = due } else { pool = known }
                    guard !pool.isEmpty else { continue }
                    let id = pool[n % pool.count]
                    expected = await Self.outcome { try reference.begin(id, at: now, lease: 30) }
                    actual = await Self.outcome { try await store.beginAttempt(id, at: now, lease: .seconds(30)).attempts }
                case .succeed(let n):
                    guard !inFlight.isEmpty else { continue }
                    let id = inFlight[n % inFlight.count]
                    expected = await Self.outcome { try reference.succeed(id) }
                    actual = await Self.outcome { try await store.recordSuccess(id, serverID: "s", at: now) }
                case .fail(let n):
                    guard !inFlight.isEmpty else { continue }
                    let id = inFlight[n % inFlight.count]
                    let retryAt = now.addingTimeInterval(30)
                    expected = await Self.outcome {
                        let (status, cascade) = try reference.fail(id, retryAt: retryAt)
                        return "\(status) \(cascade.sorted())"
                    }
                    actual = await Self.outcome {
                        let result = try await store.recordFailure(id, StoreStep.transientFailure, retryAt: retryAt)
                        return "\(result.status) \(result.cascade.dependents.sorted())"
                    }
                case .retryQuarantined(let n):
                    let stopped = reference.entries.values.filter { $0.status == .quarantined || $0.status == .conflict }
                        .map(\.id).sorted()
                    guard !stopped.isEmpty else { continue }
                    let id = stopped[n % stopped.count]
                    expected = await Self.outcome { try reference.retry(id, at: now).sorted() }
                    actual = await Self.outcome { try await store.retry(id, at: now).dependents.sorted() }
                case .quarantine(let n), .conflict(let n), .retry(let n), .discard(let n):
                    guard !known.isEmpty else { continue }
                    let id = known[n % known.count]
                    switch step {
                    case .quarantine:
                        expected = await Self.outcome { try reference.quarantine(id).sorted() }
                        actual = await Self.outcome { try await store.quarantine(id, StoreStep.permanentFailure).dependents.sorted() }
                    case .conflict:
                        expected = await Self.outcome { try reference.conflict(id) }
                        actual = await Self.outcome { try await store.markConflict(id, StoreStep.conflictFailure) }
                    case .retry:
                        expected = await Self.outcome { try reference.retry(id, at: now).sorted() }
                        actual = await Self.outcome { try await store.retry(id, at: now).dependents.sorted() }
                    default:
                        expected = await Self.outcome { try reference.discard(id).sorted() }
                        actual = await Self.outcome { try await store.discard(id).dependents.sorted() }
                    }
                case .advance(let seconds):
                    now = now.addingTimeInterval(Double(seconds))
                    continue
                case .reopen, .checkpoint, .compact:
                    continue  // not generated: the in-memory store has no disk
                }
                #expect(expected == actual, "step \(index) \(step)")

                // The whole state, after every step.
                let entries = try await store.entries(matching: .all)
                let stored = Dictionary(uniqueKeysWithValues: entries.map { ($0.id, "\($0.status)/\($0.attempts)") })
                let modelled = reference.entries.mapValues { "\($0.status)/\($0.attempts)" }
                #expect(stored == modelled, "state after step \(index) \(step)")
                #expect(try await store.dueIDs(at: now) == reference.due(at: now), "send order after step \(index) \(step)")
                for id in reference.delivered { #expect(try await store.completion(of: id) != nil) }
                // Never two entries of one scope in flight, whatever the model says.
                let scopesInFlight = entries.filter { $0.status == .inFlight }.compactMap(\.scope)
                #expect(Set(scopesInFlight).count == scopesInFlight.count, "two entries of one scope in flight after step \(index) \(step)")
            }
            try await Self.expectDrains(store, from: now, after: steps)
        }
    }

    /// Liveness, checked on the store alone: finishing the attempts still
    /// running and delivering everything that comes due (letting time pass)
    /// leaves unsent only entries that wait for a decision — a `conflict`
    /// among their dependencies, directly or not, or ahead of them in their
    /// scope. Anything else left is a deadlock.
    static func expectDrains(_ store: some OutboxStore, from start: Date, after steps: [Step]) async throws {
        var now = start
        for entry in try await store.entries(matching: OutboxFilter(statuses: [.inFlight])) {
            try await store.recordSuccess(entry.id, serverID: nil, at: now)  // attempts left running by the steps
        }
        for _ in 0..<1_000 {
            let due = try await store.dueIDs(at: now)
            if due.isEmpty {
                guard let next = try await store.nextDueDate(), next > now else { break }
                now = next
                continue
            }
            for id in due {
                do { try await store.deliver(id, at: now) } catch {
                    Issue.record("\(id) was due but could not be delivered: \(error); steps: \(steps)")
                    return
                }
            }
        }
        let all = Dictionary(uniqueKeysWithValues: try await store.entries(matching: .all).map { ($0.id, $0) })
        let stuck = all.values.filter { $0.status == .pending || $0.status == .waitingToRetry }
        // Waiting for a decision: a conflicting dependency; a dependency that
        // waits for one; or an entry of the same scope that does (and so
        // holds the scope). Grown to a fixed point.
        var waiting: Set<OutboxEntry.ID> = []
        var grew = true
        while grew {
            grew = false
            for entry in stuck where !waiting.contains(entry.id) {
                let byDependency = entry.dependencies.contains { all[$0]?.status == .conflict || waiting.contains($0) }
                let byScope = entry.scope.map { scope in stuck.contains { $0.scope == scope && waiting.contains($0.id) } } ?? false
                if byDependency || byScope {
                    waiting.insert(entry.id)
                    grew = true
                }
            }
        }
        for entry in stuck where !waiting.contains(entry.id) {
            Issue.record("\(entry.id) (scope \(entry.scope ?? "-")) can never be sent; steps: \(steps)")
        }
    }
}
