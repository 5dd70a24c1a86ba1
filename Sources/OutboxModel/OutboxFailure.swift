/// Why an entry's last attempt failed, or why it was set aside for a
/// person: a ``cause`` a program switches on, the fields that go with it
/// (``httpStatus``; the parent of a ``Cause/dependency(_:)``), and a
/// ``message`` for people.
///
/// A store keeps the cause as a one-byte code (Docs/STORE-FORMAT.md); nothing
/// decides anything by reading the message.
///
/// ```swift
/// if case .dependency(let parentFailure) = entry.lastFailure?.cause {
///     showBlocked(by: parentFailure.parent)
/// }
/// ```
public struct OutboxFailure: Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a program needs to know it.
    public enum Cause: Sendable, Hashable {
        /// The request never reached the server: no connection, the
        /// dispatcher stopped before sending, a claim given back. Not counted.
        case notSent
        /// Sent, but the answer was lost (a dropped connection, the delivery
        /// timeout, a cancelled attempt): the server may have applied it.
        /// Resent with the same key; not counted.
        case interrupted
        /// The attempt's lease ended with no outcome recorded (the app was
        /// killed while sending): the server may have applied it. Counted.
        case leaseExpired
        /// The server still processes an earlier request with this key:
        /// polled again, not counted.
        case inProgress
        /// The server cannot take requests now
        /// (`OutboxDispatcherConfiguration/unavailableStatuses`): not
        /// counted.
        case unavailable
            /// A failure worth retrying: the handler's
        /// `OutboxOutcome/transient(reason:httpStatus:retryAfter:)`, or the
        /// dispatcher's own (a payload file that cannot be read now, an
        /// earlier attempt's handler still running). Counted.
        case transient
        /// The handler threw an error (a transient failure). Counted.
        case handlerError
        /// Quarantined: the entry used all its attempts. ``httpStatus`` and
        /// ``message`` are the last attempt's.
        case attemptsUsedUp
        /// Quarantined: the handler reported a failure that sending again
        /// cannot fix (`OutboxOutcome/permanent(reason:httpStatus:)`).
        case permanent
        /// Quarantined: `OutboxDispatcherConfiguration/maximumAge` passed
        /// since the server first answered.
        case expired
        /// Quarantined: the file that holds the entry's body is damaged or
        /// missing (the message names the file, the offset and the damage).
        case payloadFileDamaged
        /// A `local:` reference in the request cannot be resolved: waiting
        /// for the entry it names, or quarantined if that entry is unknown or
        /// was delivered without a server id.
        case unresolvedReference
        /// Quarantined because of one of the entry's dependencies.
        case dependency(OutboxDependencyFailure)
        /// In `conflict`: the server reported a conflict with its data.
        case conflict
        /// In `conflict`: the server says it already processed the key but
        /// cannot give the first answer again.
        case alreadyProcessed
        /// In `conflict`: the server reported the first request in progress
        /// for longer than `OutboxDispatcherConfiguration/inProgressBudget`.
        case inProgressTooLong
        /// In `conflict`: an attempt's outcome is unknown, and the server may
        /// have forgotten its key since
        /// (`OutboxDispatcherConfiguration/keyRetention`).
        case keyMayBeForgotten

        /// The cause's name in the CLI's JSON: the case's name (`dependency`
        /// for any dependency failure).
        public var name: String {
            switch self {
            case .notSent: "notSent"
            case .interrupted: "interrupted"
            case .leaseExpired: "leaseExpired"
            case .inProgress: "inProgress"
            case .unavailable: "unavailable"
            case .transient: "transient"
            case .handlerError: "handlerError"
            case .attemptsUsedUp: "attemptsUsedUp"
            case .permanent: "permanent"
            case .expired: "expired"
            case .payloadFileDamaged: "payloadFileDamaged"
            case .unresolvedReference: "unresolvedReference"
            case .dependency: "dependency"
            case .conflict: "conflict"
            case .alreadyProcessed: "alreadyProcessed"
            case .inProgressTooLong: "inProgressTooLong"
            case .keyMayBeForgotten: "keyMayBeForgotten"
            }
        }
    }

    public var cause: Cause
    /// The HTTP status of the answer this failure is about, if there was
    /// one: a store records only ``httpStatuses``.
    public var httpStatus: Int?
    /// What happened, for people (a handler's reason, an error's text), cut
    /// to ``maximumMessageBytes`` bytes of UTF-8.
    public var message: String?

    /// The longest message kept, in bytes of UTF-8: a longer one is cut
    /// between two Unicode scalars.
    public static let maximumMessageBytes = 2048
    /// The statuses a store records: an HTTP status has three digits.
    public static let httpStatuses = 100...999

    /// `message` is cut to ``maximumMessageBytes``.
    public init(_ cause: Cause, httpStatus: Int? = nil, message: String? = nil) {
        self.cause = cause
        self.httpStatus = httpStatus
        self.message = message.map(Self.cut)
    }

    /// The dependency failure, if that is the cause.
    public var dependency: OutboxDependencyFailure? {
        if case .dependency(let dependency) = cause { dependency } else { nil }
    }

    /// `cause` with this failure's status and message: how a failure is
    /// kept when it ends an entry (the last attempt's failure, once its
    /// attempts are used up or its age passed).
    package func becoming(_ cause: Cause) -> OutboxFailure {
        OutboxFailure(cause, httpStatus: httpStatus, message: message)
    }

    /// The message cut to what a store keeps (it may have been set after
    /// the failure was made).
    package var kept: OutboxFailure { OutboxFailure(cause, httpStatus: httpStatus, message: message) }

    /// `text`'s longest prefix of whole Unicode scalars that fits in
    /// ``maximumMessageBytes`` bytes of UTF-8.
    package static func cut(_ text: String) -> String {
        guard text.utf8.count > maximumMessageBytes else { return text }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= maximumMessageBytes else { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// For people: what happened, the status (unless the message starts
    /// with it, as an HTTP handler's does), and the message:
    /// `gave up after using every attempt (HTTP 500): internal error`.
    public var description: String {
        var text = cause.phrase
        if let httpStatus, !Self.startsWithStatus(message, httpStatus) { text += " (HTTP \(httpStatus))" }
        if let message { text += ": \(message)" }
        return text
    }
}

extension OutboxFailure {
    /// Whether `message` starts with `HTTP <status>` and no more digits, as
    /// an HTTP handler's reason does: the description then does not repeat
    /// the status. For people only; nothing is decided from it.
    fileprivate static func startsWithStatus(_ message: String?, _ status: Int) -> Bool {
        guard let message, message.hasPrefix("HTTP \(status)") else { return false }
        let rest = message.dropFirst("HTTP \(status)".count)
        return rest.first.map { !$0.isNumber } ?? true
    }
}

extension OutboxFailure.Cause {
    /// What the cause means in a sentence, for ``OutboxFailure/description``.
    package var phrase: String {
        switch self {
        case .notSent: "not sent"
        case .interrupted: "interrupted (sent, no answer)"
        case .leaseExpired: "the attempt's lease expired without an outcome"
        case .inProgress: "the server is still processing the first request"
        case .unavailable: "the server is unavailable"
        case .transient: "failed"
        case .handlerError: "the handler threw"
        case .attemptsUsedUp: "gave up after using every attempt"
        case .permanent: "refused"
        case .expired: "expired: the maximum age passed since the server's first answer"
        case .payloadFileDamaged: "the payload file is damaged"
        case .unresolvedReference: "a local: reference cannot be resolved"
        case .dependency(let failure): failure.description
        case .conflict: "conflict"
        case .alreadyProcessed: "the server already processed the key but cannot answer again"
        case .inProgressTooLong: "the server reports the first request in progress for too long"
        case .keyMayBeForgotten: "outcome unknown, and the server may have forgotten the key"
        }
    }
}
