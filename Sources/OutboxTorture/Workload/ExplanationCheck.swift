import Foundation
import OutboxStorage

/// Whether a store explains each write it holds by a reason the write's
/// status allows: never `unknown`, never another status than its own. Run
/// by the outbox torture's app on every reopened queue, so that the states
/// a kill and a recovery leave behind (pending again after an attempt cut
/// off, waiting to retry, behind the head of a conversation, quarantined)
/// are each explained; and by `outbox demo` on what its day left.
public enum ExplanationCheck {
    /// Explains every entry of `store`; the number explained, or what was wrong.
    public static func explainAll(_ store: some OutboxStore, at now: Date) async throws(OutboxError) -> Result<Int, Problem> {
        let entries = try await store.entries(matching: OutboxFilter())
        for entry in entries {
            let explanation = try await store.explain(entry.id, at: now)
            if let problem = problem(explanation, status: entry.status) { return .failure(Problem(description: "\(entry.id): \(problem)")) }
        }
        return .success(entries.count)
    }

    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    /// What is wrong with `explanation` for a write in `status`, if anything.
    static func problem(_ explanation: OutboxExplanation, status: OutboxStatus) -> String? {
        guard explanation.status == status else {
            return "explained as \(explanation.status?.rawValue ?? "unknown to the store"), but its status is \(status.rawValue)"
        }
        return fits(explanation.reason, status) ? nil : "\(status.rawValue), explained as \(explanation.reason.name): \(explanation)"
    }

    private static func fits(_ reason: OutboxExplanation.Reason, _ status: OutboxStatus) -> Bool {
        switch (status, reason) {
        case (_, .unknown): false
        case (.succeeded, .delivered), (.quarantined, .quarantined), (.conflict, .conflict), (.inFlight, .sending): true
        case (.pending, .due), (.pending, .retryAt), (.pending, .behindInScope), (.pending, .waitingForParent): true
        case (.waitingToRetry, .due), (.waitingToRetry, .retryAt), (.waitingToRetry, .behindInScope),
            (.waitingToRetry, .waitingForParent):
            true
        default: false
        }
    }
}
