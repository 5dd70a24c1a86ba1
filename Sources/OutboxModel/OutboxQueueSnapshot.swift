import Foundation

/// What a queue looks like from the process that drains it, taken every
/// few seconds: its counts, how fast it drains and how long attempts take,
/// the oldest waiting writes with why each waits, and the recent failures
/// by cause. The dispatcher writes it beside the queue
/// (`OutboxDispatcherConfiguration.snapshotInterval`) so that
/// `outbox top` can follow a queue another process
/// holds open; any process can read it without the queue's lock.
///
/// Its JSON form (``encoded()``, ``init(decoding:)``) is what the file holds
/// (sealed under the queue's key when the queue is encrypted): times are
/// milliseconds since 1970, durations milliseconds.
public struct OutboxQueueSnapshot: Sendable, Hashable, Codable {
    /// The version this code writes and reads.
    public static let currentVersion = 1
    /// Larger files are not a snapshot: refused unread.
    public static let maximumEncodedSize = 256 * 1024
    /// How many seconds of activity a snapshot carries.
    public static let secondsKept = 300
    /// How many waiting writes it names, oldest first.
    public static let waitingKept = 10
    /// How many failure causes it names, most frequent first.
    public static let causesKept = 10
    /// How many ended attempts it names, newest first.
    public static let attemptsKept = 100

    public var version = Self.currentVersion
    public var takenAt: Date
    /// The process that took it.
    public var processID: Int32
    public var dispatcher: DispatcherState
    /// Entries by status (every status, 0 when none).
    public var counts: [String: Int]
    /// When the oldest unsent write was enqueued.
    public var oldestUnsentAt: Date?
    /// Since when the queue has been stalled
    /// (`OutboxDispatcherConfiguration.stallThreshold`), if it is.
    public var stalledSince: Date?
    /// Activity second by second, oldest first, seconds without activity left out.
    public var seconds: [Second]
    /// The median and 95th percentile of the attempts that ended in the
    /// last minute, in milliseconds; `nil` when none did.
    public var latencyP50: Double?
    public var latencyP95: Double?
    /// The oldest writes not yet delivered nor set aside, oldest first, each with why it waits.
    public var waiting: [Waiting]
    /// Failed attempts of the last ``secondsKept`` seconds by cause, most frequent first.
    public var failures: [FailureCount]
    /// The last ``attemptsKept`` attempts that ended, newest first: each
    /// write's recent attempt history, as its draining process saw it.
    public var attempts: [Attempt]

    /// What the dispatcher was doing.
    public enum DispatcherState: String, Sendable, Hashable, Codable, CaseIterable {
        case running, paused, offline, stopped
    }

    /// One second of delivery activity.
    public struct Second: Sendable, Hashable, Codable {
        public var at: Date
        /// Writes delivered (or answered from the server's record) in this second.
        public var delivered: Int
        /// Attempts that failed in this second, whatever became of the write.
        public var failed: Int
        /// The median and 95th percentile of the attempts that ended in this
        /// second, from the attempt's start to its outcome, in milliseconds.
        public var latencyP50: Double?
        public var latencyP95: Double?

        public init(at: Date, delivered: Int, failed: Int, latencyP50: Double?, latencyP95: Double?) {
            self.at = at
            self.delivered = delivered
            self.failed = failed
            self.latencyP50 = latencyP50
            self.latencyP95 = latencyP95
        }
    }

    /// A write that waits, and why.
    public struct Waiting: Sendable, Hashable, Codable {
        public var id: OutboxEntry.ID
        public var status: OutboxStatus
        public var enqueuedAt: Date
        /// ``OutboxExplanation/Reason/name``.
        public var reason: String
        /// The explanation's one sentence.
        public var why: String

        public init(id: OutboxEntry.ID, status: OutboxStatus, enqueuedAt: Date, reason: String, why: String) {
            self.id = id
            self.status = status
            self.enqueuedAt = enqueuedAt
            self.reason = reason
            self.why = why
        }
    }

    /// One attempt that ended, and how.
    public struct Attempt: Sendable, Hashable, Codable {
        public var id: OutboxEntry.ID
        /// Its attempt number (1 for the first).
        public var attempt: Int
        public var startedAt: Date
        public var endedAt: Date
        /// How it ended: ``Outcome``.
        public var outcome: Outcome
        /// For a failed attempt, ``FailureCount/cause``'s name for its cause.
        public var cause: String?
        /// For a failed attempt, its failure in a sentence (at most ``detailKept`` characters).
        public var detail: String?

        /// The longest ``detail`` kept.
        public static let detailKept = 240

        /// How an attempt ended.
        public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
            /// Delivered, or answered from the server's record of an earlier attempt.
            case delivered
            /// Failed; the write is retried later.
            case waitingToRetry
            /// Interrupted (the process or its connection went away); retried later.
            case interrupted
            /// Failed for good; set aside until someone retries or discards it.
            case quarantined
            /// The server holds a conflicting write; set aside for a decision.
            case conflict
        }

        public init(
            id: OutboxEntry.ID, attempt: Int, startedAt: Date, endedAt: Date, outcome: Outcome, cause: String? = nil,
            detail: String? = nil
        ) {
            self.id = id
            self.attempt = attempt
            self.startedAt = startedAt
            self.endedAt = endedAt
            self.outcome = outcome
            self.cause = cause
            self.detail = detail.map { String($0.prefix(Self.detailKept)) }
        }
    }

    /// Failed attempts of one cause.
    public struct FailureCount: Sendable, Hashable, Codable {
        /// ``OutboxFailure/Cause/name``, with the HTTP status when there was one ("server, HTTP 503").
        public var cause: String
        public var count: Int
        public var lastAt: Date

        public init(cause: String, count: Int, lastAt: Date) {
            self.cause = cause
            self.count = count
            self.lastAt = lastAt
        }
    }

    public init(
        takenAt: Date, processID: Int32, dispatcher: DispatcherState, summary: OutboxSummary, stalledSince: Date?,
        seconds: [Second], latencyP50: Double? = nil, latencyP95: Double? = nil, waiting: [Waiting],
        failures: [FailureCount], attempts: [Attempt] = []
    ) {
        self.takenAt = takenAt
        self.processID = processID
        self.dispatcher = dispatcher
        counts = Dictionary(uniqueKeysWithValues: OutboxStatus.allCases.map { ($0.rawValue, summary.count($0)) })
        oldestUnsentAt = summary.oldestUnsentAt
        self.stalledSince = stalledSince
        self.seconds = seconds
        self.latencyP50 = latencyP50
        self.latencyP95 = latencyP95
        self.waiting = waiting
        self.failures = failures
        self.attempts = attempts
    }

    /// The count of `status` (0 when the snapshot has none).
    public func count(_ status: OutboxStatus) -> Int { counts[status.rawValue] ?? 0 }

    /// Writes delivered per second over the `window` seconds before ``takenAt``.
    public func drainRate(over window: Int = 10) -> Double {
        let start = takenAt.addingTimeInterval(-Double(window))
        let delivered = seconds.filter { $0.at > start }.reduce(0) { $0 + $1.delivered }
        return Double(delivered) / Double(max(1, window))
    }
}
