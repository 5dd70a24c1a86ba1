import Foundation
import OutboxStorage
import Testing

@testable import OutboxTorture

/// The check the outbox torture's app runs on every reopened queue: each
/// write explained by a reason its status allows. It must pass a real
/// queue in several states and refuse an explanation that does not fit.
@Suite("Explanation check")
struct ExplanationCheckTests {
    @Test("a queue with due, scoped, dependent, retrying and quarantined writes is explained write by write")
    func realQueue() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-explain-check-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try await LogOutboxStore.open(root: .init(root.path), partition: "u")
        func add(_ scope: String?, dependencies: [OutboxEntry.ID] = []) async throws -> OutboxEntry.ID {
            let request = OutboxEnqueueRequest(type: "t", method: "POST", endpoint: "/x", scope: scope, dependencies: dependencies)
            guard case .enqueued(let entry) = try await store.enqueue(request) else { throw ExplanationCheck.Problem(description: "not enqueued") }
            return entry.id
        }
        let head = try await add("s")
        _ = try await add("s")  // behind the head of its scope
        let parent = try await add(nil)
        _ = try await add("child", dependencies: [parent])  // waits for its parent
        let failing = try await add("f")
        let now = Date()
        _ = try await store.beginAttempt(failing, at: now, lease: .seconds(30))
        _ = try await store.recordFailure(failing, OutboxFailure(.transient, httpStatus: 503), retryAt: now.addingTimeInterval(60))
        let refused = try await add("q")
        _ = try await store.quarantine(refused, OutboxFailure(.permanent, httpStatus: 422))
        _ = try await store.beginAttempt(head, at: now, lease: .seconds(30))

        let result = try await ExplanationCheck.explainAll(store, at: now)
        #expect(try result.get() == 6)
        try await store.close()
    }

    @Test("an explanation that does not fit its write's status is refused, and so is unknown")
    func misfits() {
        let id = OutboxEntry.ID()
        let cases: [(OutboxExplanation, OutboxStatus, Bool)] = [
            (OutboxExplanation(id: id, status: .pending, reason: .due), .pending, true),
            (OutboxExplanation(id: id, status: .quarantined, reason: .quarantined), .quarantined, true),
            (OutboxExplanation(id: id, status: .pending, reason: .quarantined), .pending, false),
            (OutboxExplanation(id: id, status: .waitingToRetry, reason: .sending(attempt: 1, leaseUntil: Date())), .waitingToRetry, false),
            (OutboxExplanation(id: id, status: .pending, reason: .due), .waitingToRetry, false),
            (OutboxExplanation(id: id, status: nil, reason: .unknown), .pending, false),
            (OutboxExplanation(id: id, status: .conflict, reason: .unknown), .conflict, false),
        ]
        for (explanation, status, fits) in cases {
            #expect((ExplanationCheck.problem(explanation, status: status) == nil) == fits, "\(explanation) for \(status)")
        }
    }
}
