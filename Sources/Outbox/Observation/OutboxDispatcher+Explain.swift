import Foundation
import OutboxModel
import OutboxStorage

extension OutboxDispatcher {
    /// Why `id` has not gone out yet, or that it has, in one value: what
    /// holds it, when it may go, and what would move it
    /// (``/OutboxModel/OutboxExplanation/remedy``); its `description` is one
    /// sentence for people.
    ///
    /// The store says what it knows (the retry time, the head of the
    /// entry's scope, a parent not delivered, a person's decision); for a
    /// write that could otherwise go, the dispatcher's own state comes first,
    /// because it holds every write: stopped, paused, offline, then no
    /// handler for the write's type.
    ///
    /// ```swift
    /// let why = try await dispatcher.explain(id)
    /// if case .retryParent(let parent) = why.remedy { try await dispatcher.retry(parent) }
    /// ```
    public func explain(_ id: OutboxEntry.ID) async throws(OutboxError) -> OutboxExplanation {
        var explanation = try await store.explain(id, at: clock.now())
        guard explanation.status?.isSendable == true else { return explanation }
        let switches = switches.current
        if switches.lifecycle == .stopped {
            explanation.reason = .stopped
        } else if switches.paused {
            explanation.reason = .paused
        } else if !switches.online {
            explanation.reason = .offline
        } else if let type = explanation.type, handlers[type] == nil, fallback == nil {
            explanation.reason = .noHandler(type: type)
        }
        return explanation
    }
}
