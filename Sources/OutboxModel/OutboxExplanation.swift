import Foundation

/// Why one write has not gone out yet — or that it has — as a value a
/// program can switch on, with what would move it and a sentence for people.
///
/// A store explains what it knows (status, retry time, scope order,
/// dependencies); a dispatcher adds what holds every write (paused, offline,
/// stopped, no handler for the type).
///
/// ```swift
/// let why = try await dispatcher.explain(id)
/// if case .retryParent(let parent) = why.remedy { showRetryButton(for: parent) }
/// print(why)   // "waiting for its parent 6F1C…, which is quarantined: retry 6F1C… (or discard it)"
/// ```
public struct OutboxExplanation: Sendable, Hashable, CustomStringConvertible {
    /// The write explained.
    public var id: OutboxEntry.ID
    /// Its status, or `nil` for an id the store does not know.
    public var status: OutboxStatus?
    /// Its type (what picks its handler), if the store still holds it.
    public var type: String?
    /// What holds it now (or that nothing does).
    public var reason: Reason
    /// When it may go next, if a time is known.
    public var nextAttemptAt: Date?
    /// The last attempt's failure, or why it was set aside.
    public var lastFailure: OutboxFailure?

    public init(
        id: OutboxEntry.ID, status: OutboxStatus?, type: String? = nil, reason: Reason, nextAttemptAt: Date? = nil,
        lastFailure: OutboxFailure? = nil
    ) {
        self.id = id
        self.status = status
        self.type = type
        self.reason = reason
        self.nextAttemptAt = nextAttemptAt
        self.lastFailure = lastFailure
    }

    /// What holds a write.
    public enum Reason: Sendable, Hashable {
        /// The store does not know the id: never enqueued here, discarded,
        /// or delivered longer ago than the store keeps completions.
        case unknown
        /// Delivered; the server's id for it, if it gave one.
        case delivered(serverID: String?)
        /// Nothing: it is due and goes with the next drain.
        case due
        /// An attempt is running; its lease ends at the date.
        case sending(attempt: Int, leaseUntil: Date)
        /// Its retry time has not come (a backoff, a `Retry-After`, a server
        /// still processing it, an unavailable server).
        case retryAt(Date)
        /// Behind the first unfinished write of its scope (`scope` `nil`: the
        /// unscoped writes, which go in order), which goes first.
        case behindInScope(scope: String?, head: OutboxEntry.ID)
        /// A write it depends on has not been delivered yet (`parentStatus`
        /// `nil`: the parent is not in the queue and has no completion).
        case waitingForParent(OutboxEntry.ID, parentStatus: OutboxStatus?)
        /// Set aside until a person decides; ``OutboxExplanation/lastFailure`` says why.
        case quarantined
        /// Left for the app to resolve a conflict.
        case conflict
        /// The dispatcher is paused.
        case paused
        /// The dispatcher believes the device is offline.
        case offline
        /// The dispatcher is stopped (or was never started).
        case stopped
        /// No handler is registered for the write's type.
        case noHandler(type: String)

        /// What an entry's status alone says, for the statuses nothing else
        /// holds (in flight, set aside, delivered); `nil` for `pending` and
        /// `waitingToRetry`, whose reason depends on the rest of the queue.
        package static func ofStatus(_ status: OutboxStatus, attempt: Int, leaseUntil: Date, serverID: String?) -> Self? {
            switch status {
            case .succeeded: .delivered(serverID: serverID)
            case .quarantined: .quarantined
            case .conflict: .conflict
            case .inFlight: .sending(attempt: attempt, leaseUntil: leaseUntil)
            case .pending, .waitingToRetry: nil
            }
        }

        /// A stable name for the case (JSON, logs, metrics labels).
        public var name: String {
            switch self {
            case .unknown: "unknown"
            case .delivered: "delivered"
            case .due: "due"
            case .sending: "sending"
            case .retryAt: "retryAt"
            case .behindInScope: "behindInScope"
            case .waitingForParent: "waitingForParent"
            case .quarantined: "quarantined"
            case .conflict: "conflict"
            case .paused: "paused"
            case .offline: "offline"
            case .stopped: "stopped"
            case .noHandler: "noHandler"
            }
        }
    }

    /// What would move a write.
    public enum Remedy: Sendable, Hashable {
        /// Nothing: it goes (or went) by itself.
        case nothing
        /// Wait until the date.
        case waitUntil(Date)
        /// Wait for another write to be delivered.
        case waitFor(OutboxEntry.ID)
        /// Retry (or discard) the quarantined parent it depends on.
        case retryParent(OutboxEntry.ID)
        /// Retry it or discard it.
        case retryOrDiscard
        /// Resolve the conflict: mark it delivered, retry or discard it.
        case resolveConflict
        case resume
        case goOnline
        case start
        case registerHandler(type: String)

        /// A stable name for the case (JSON, logs).
        public var name: String {
            switch self {
            case .nothing: "nothing"
            case .waitUntil: "waitUntil"
            case .waitFor: "waitFor"
            case .retryParent: "retryParent"
            case .retryOrDiscard: "retryOrDiscard"
            case .resolveConflict: "resolveConflict"
            case .resume: "resume"
            case .goOnline: "goOnline"
            case .start: "start"
            case .registerHandler: "registerHandler"
            }
        }
    }

    /// What would move this write.
    public var remedy: Remedy {
        switch reason {
        case .unknown, .delivered, .due: .nothing
        case .sending(_, let leaseUntil): .waitUntil(leaseUntil)
        case .retryAt(let date): .waitUntil(date)
        case .behindInScope(_, let head): .waitFor(head)
        case .waitingForParent(let parent, let status):
            status == .quarantined || status == .conflict ? .retryParent(parent) : .waitFor(parent)
        case .quarantined:
            if case .dependency(.quarantined(let parent)) = lastFailure?.cause { .retryParent(parent) } else { .retryOrDiscard }
        case .conflict: .resolveConflict
        case .paused: .resume
        case .offline: .goOnline
        case .stopped: .start
        case .noHandler(let type): .registerHandler(type: type)
        }
    }

    /// The other write this one waits for or whose fate decides it (the
    /// head of its scope, a parent), if there is one.
    public var waitsFor: OutboxEntry.ID? {
        switch reason {
        case .behindInScope(_, let head): head
        case .waitingForParent(let parent, _): parent
        default: if case .retryParent(let parent) = remedy { parent } else { nil }
        }
    }

    /// One sentence: what holds the write, and what would move it.
    public var description: String { OutboxExplanationText.sentence(for: self) }
}
