import Foundation

/// The one sentence an ``OutboxExplanation`` reads as: what holds the write,
/// then what would move it. Written for people; a program reads the
/// explanation's ``OutboxExplanation/reason`` and ``OutboxExplanation/remedy``.
enum OutboxExplanationText {
    static func sentence(for explanation: OutboxExplanation) -> String {
        let cause = self.cause(explanation)
        guard let remedy = remedy(explanation.remedy) else { return cause }
        return "\(cause): \(remedy)"
    }

    private static func cause(_ explanation: OutboxExplanation) -> String {
        switch explanation.reason {
        case .unknown: return "not in this queue (never enqueued here, discarded, or delivered longer ago than completions are kept)"
        case .delivered(let serverID): return "delivered" + (serverID.map { " (the server calls it \($0))" } ?? "")
        case .due: return "due: it goes with the next drain"
        case .sending(let attempt, let leaseUntil): return "being sent (attempt \(attempt), lease until \(time(leaseUntil)))"
        case .retryAt(let date):
            let after = explanation.lastFailure.map { " after \(failure($0))" } ?? ""
            return "waiting to retry at \(time(date))\(after)"
        case .behindInScope(let scope, let head):
            let queue = scope.map { "its scope \"\($0)\"" } ?? "the unscoped writes, which go in order"
            return "behind \(head), the first unfinished write of \(queue)"
        case .waitingForParent(let parent, let status):
            return "waiting for its parent \(parent), which is " + (status.map { "\($0)" } ?? "not in this queue")
        case .quarantined: return "quarantined" + (explanation.lastFailure.map { " (\(failure($0)))" } ?? "")
        case .conflict: return "in conflict" + (explanation.lastFailure.map { " (\(failure($0)))" } ?? "")
        case .paused: return "the dispatcher is paused"
        case .offline: return "the dispatcher believes the device is offline"
        case .stopped: return "the dispatcher is stopped"
        case .noHandler(let type): return "no handler is registered for its type \"\(type)\""
        }
    }

    private static func remedy(_ remedy: OutboxExplanation.Remedy) -> String? {
        switch remedy {
        case .nothing: nil
        case .waitUntil(let date): "it goes by itself after \(time(date))"
        case .waitFor(let id): "it goes once \(id) is delivered"
        case .retryParent(let parent): "retry \(parent) (or discard it)"
        case .retryOrDiscard: "retry it or discard it"
        case .resolveConflict: "resolve the conflict (mark it delivered, retry or discard it)"
        case .resume: "resume the dispatcher"
        case .goOnline: "it goes when the device is back online"
        case .start: "start the dispatcher"
        case .registerHandler(let type): "register a handler for \"\(type)\""
        }
    }

    private static func failure(_ failure: OutboxFailure) -> String {
        if case .dependency(let dependency) = failure.cause { return dependency.description }
        var text = failure.cause.name
        if let status = failure.httpStatus { text += ", HTTP \(status)" }
        return text
    }

    private static func time(_ date: Date) -> String { date.formatted(.iso8601) }
}
