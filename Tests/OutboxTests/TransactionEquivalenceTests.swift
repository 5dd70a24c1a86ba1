import CLITestSupport
import Foundation
import PropertyBased
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// A transaction is checked first and then applied to
/// the scheduler itself (`Scheduler.enqueueAll`), instead of running on a
/// copy of the scheduler. The model is the copy: on random queues (limits,
/// coalescing keys, app keys, dependencies, entries in every status) and
/// random batches (duplicates within the batch and of the queue, unknown
/// and forward dependencies, replacements of the queue's and the batch's
/// own entries, batches that overflow), both must give the same outcomes,
/// the same records to write, the same error — and leave schedulers that
/// hold the same entries and send them in the same order.
@Suite("Transactions: checked, then applied in place, as on a copy", .propertySeedFromEnvironment)
struct TransactionEquivalenceTests {
    /// One request of a history or of a batch, in indices a generator can draw.
    struct Request: Sendable, CustomStringConvertible {
        var id: Int  // into the pool of ids
        var scope: Int  // 0: none
        var coalesce: Int?  // key index
        var appKey: Int?
        var parents: [Int]  // into the pool of ids
        var bytes: Int

        var description: String {
            "#\(id) s\(scope)\(coalesce.map { " c\($0)" } ?? "")\(appKey.map { " k\($0)" } ?? "")"
                + (parents.isEmpty ? "" : " ←\(parents)") + " \(bytes)B"
        }
    }

    enum Step: Sendable, CustomStringConvertible {
        case enqueue(Request)
        case claim(Int)
        case succeed(Int)
        case fail(Int)
        case quarantine(Int)
        case discard(Int)

        var description: String {
            switch self {
            case .enqueue(let request): "enqueue(\(request))"
            case .claim(let n): "claim(\(n))"
            case .succeed(let n): "succeed(\(n))"
            case .fail(let n): "fail(\(n))"
            case .quarantine(let n): "quarantine(\(n))"
            case .discard(let n): "discard(\(n))"
            }
        }
    }

    struct Case: Sendable, CustomStringConvertible {
        var maximumEntries: Int?
        var maximumBytes: Int?
        var evict: Bool
        var concurrent: Bool
        var history: [Step]
        var batch: [Request]

        var description: String {
            "limits \(maximumEntries.map(String.init) ?? "-")/\(maximumBytes.map(String.init) ?? "-")\(evict ? " evict" : "")"
                + "\(concurrent ? " concurrent" : ""), history \(history), batch \(batch)"
        }
    }

    static let pool = 14

    static let request = zip(
        Gen.int(in: 0..<pool), Gen.int(in: 0...3), Gen.int(in: 0...5), Gen.int(in: 0...6),
        Gen.int(in: 0..<pool).array(of: 0...2), Gen.int(in: 0...9)
    ).map { id, scope, coalesce, appKey, parents, size in
        Request(
            id: id, scope: scope, coalesce: coalesce < 2 ? coalesce : nil, appKey: appKey < 3 ? appKey : nil,
            parents: size < 6 ? [] : parents, bytes: 100 + 50 * size)
    }

    static let step = Gen<Step>.frequency(
        (6, request.map { Step.enqueue($0) }),
        (3, Gen.int(in: 1...3).map { Step.claim($0) }),
        (2, Gen.int(in: 0..<pool).map { Step.succeed($0) }),
        (1, Gen.int(in: 0..<pool).map { Step.fail($0) }),
        (1, Gen.int(in: 0..<pool).map { Step.quarantine($0) }),
        (1, Gen.int(in: 0..<pool).map { Step.discard($0) })
    )

    static let scenario = zip(
        Gen.int(in: 0...9), Gen.int(in: 0...9), Gen.bool, Gen.bool, step.array(of: 0...25), request.array(of: 1...6)
    ).map { entries, bytes, evict, concurrent, history, batch in
        Case(
            maximumEntries: entries < 4 ? 4 + entries * 2 : nil, maximumBytes: bytes < 3 ? 1500 + bytes * 700 : nil,
            evict: evict, concurrent: concurrent, history: history, batch: batch)
    }

    static let ids: [OutboxEntryID] = (0..<pool).map { _ in OutboxEntryID() }
    static let now: Int64 = 1_800_000_000_000

    static func enqueueRequest(_ request: Request) -> OutboxEnqueueRequest {
        OutboxEnqueueRequest(
            id: ids[request.id], idempotencyKey: request.appKey.map { "key-\($0)" }, type: "t", method: "POST",
            endpoint: "/x", scope: request.scope == 0 ? nil : "scope-\(request.scope)",
            dependencies: Array(Set(request.parents.map { ids[$0] }).subtracting([ids[request.id]])),
            coalescingKey: request.coalesce.map { "coalesce-\($0)" }, createdAt: Date(milliseconds: now))
    }

    /// A scheduler after `history` (refused steps are skipped, as an app's would be).
    static func scheduler(for scenario: Case) -> Scheduler {
        var configuration = OutboxStoreConfiguration()
        configuration.maximumEntries = scenario.maximumEntries
        configuration.maximumBytes = scenario.maximumBytes
        configuration.fullPolicy = scenario.evict ? .evictOldestQuarantined : .reject
        configuration.unscopedDelivery = scenario.concurrent ? .concurrent : .inOrder
        var scheduler = Scheduler(partition: "p", configuration: configuration)
        for step in scenario.history {
            switch step {
            case .enqueue(let request):
                _ = try? scheduler.enqueue(enqueueRequest(request), storedBytes: request.bytes, now: now)
            case .claim(let limit):
                _ = scheduler.claim(now: now, limit: limit, leaseUntil: now + 60_000, accepts: { _ in true })
            case .succeed(let n): _ = try? scheduler.succeed(ids[n], serverID: "s\(n)", now: now)
            case .fail(let n): _ = try? scheduler.fail(ids[n], OutboxFailure(.transient, httpStatus: 503, message: "no"), retryAt: now)
            case .quarantine(let n): _ = try? scheduler.quarantine(ids[n], OutboxFailure(.permanent, httpStatus: 422, message: "bad"))
            case .discard(let n): _ = try? scheduler.discard(ids[n])
            }
        }
        return scheduler
    }

    /// What a scheduler holds, and the order it sends everything in.
    static func fingerprint(_ scheduler: Scheduler) -> String {
        var scheduler = scheduler
        var lines = ids.map { id in
            // A quarantine stamps `when` with the wall clock
            // (`Scheduler.setStatus`): an entry quarantined at its enqueue
            // (a quarantined parent) gets a different millisecond in each run.
            let metadata = scheduler.metadata(id).map { metadata in
                var metadata = metadata
                if metadata.status == .quarantined { metadata.when = 0 }
                return metadata
            }
            return "\(id): \(metadata.map { "\($0)" } ?? "-") \(scheduler.failure(id).map { "\($0)" } ?? "")"
                + " \(scheduler.completion(id).map { "\($0)" } ?? "")"
        }
        // Sorted: two equal dictionaries may list their members in different orders.
        let summary = scheduler.summary
        let counts = summary.counts.map { "\($0.key) \($0.value)" }.sorted()
        let bytes = summary.bytes.map { "\($0.key) \($0.value)" }.sorted()
        lines.append(
            "summary \(counts) \(bytes) \(summary.oldestUnsentAt.map { "\($0)" } ?? "-") \(summary.nextAttemptAt.map { "\($0)" } ?? "-")"
                + " bytes \(scheduler.totalBytes) next \(scheduler.nextSequence)")
        lines.append("keys \(scheduler.keyHolders.sorted { $0.key < $1.key })")
        var order: [String] = []
        for _ in 0..<(4 * pool) {
            let claimed = scheduler.claim(now: now, limit: 1, leaseUntil: now + 1, accepts: { _ in true }).claimed
            guard let id = claimed.first else { break }
            order.append("\(ids.firstIndex(of: id)!)")
            _ = try? scheduler.succeed(id, serverID: nil, now: now)
        }
        lines.append("order \(order)")
        return lines.joined(separator: "\n")
    }

    static func describe(_ results: [(Scheduler.EnqueueOutcome, StoreChanges)]) -> String {
        results.map { "\($0.0) \($0.1)" }.joined(separator: "; ")
    }

    @Test("enqueueAll agrees with the batch run on a copy: outcomes, records, refusals, and the queue after")
    func agreesWithTheCopy() async {
        await propertyCheck(count: modelCases(1000), input: Self.scenario) { scenario in
            let before = Self.scheduler(for: scenario)
            let batch = scenario.batch.map(Self.enqueueRequest)
            let sizes = scenario.batch.map(\.bytes)

            var model = before
            var modelResult: Result<String, OutboxError>
            do throws(OutboxError) {
                var trial = model
                var results: [(Scheduler.EnqueueOutcome, StoreChanges)] = []
                for (request, size) in zip(batch, sizes) { results.append(try trial.enqueue(request, storedBytes: size, now: Self.now)) }
                model = trial
                modelResult = .success(Self.describe(results))
            } catch {
                modelResult = .failure(error)
            }

            var scheduler = before
            var result: Result<String, OutboxError>
            do throws(Scheduler.BatchFailure) {
                result = .success(Self.describe(try scheduler.enqueueAll(batch, storedBytes: sizes, now: Self.now)))
            } catch {
                switch error {
                case .refused(let refusal): result = .failure(refusal)
                case .inconsistent(let refusal):
                    Issue.record("the check admitted what enqueue refused: \(refusal)\n\(scenario)")
                    return
                }
            }
            #expect(result == modelResult, "\(scenario)")
            #expect(Self.fingerprint(scheduler) == Self.fingerprint(model), "\(scenario)")
        }
    }
}
