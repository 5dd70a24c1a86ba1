import OutboxLog

/// Why a queue operation failed. Nothing is changed by a refused call: the
/// queue stays usable after an ``Code/invalidArgument``.
public struct QueueError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The call was refused: a bad name, size or position. Nothing changed.
        case invalidArgument
        /// The queue was closed.
        case closed
        /// A consumer's committed position did not read back as one.
        case damaged
        /// The consumer was removed (``DurableQueue/removeConsumer(named:)``):
        /// this object reads and commits no more.
        case removed
        /// The log under the queue failed; ``QueueError/log`` says how.
        case log
    }

    public var code: Code
    /// What went wrong, for logs and people.
    public var message: String
    /// The log's own error, when ``code`` is ``Code/log``.
    public var log: OutboxLogError?

    public init(_ code: Code, _ message: String, log: OutboxLogError? = nil) {
        self.code = code
        self.message = message
        self.log = log
    }

    /// The queue's error for a failure of one of its logs: closed stays
    /// closed, a refused write is the caller's, anything else the log's.
    static func from(_ error: OutboxLogError, _ doing: String) -> QueueError {
        switch error.code {
        case .closed: QueueError(.closed, "the queue is closed", log: error)
        case .invalidArgument, .recordTooLarge: QueueError(.invalidArgument, "\(doing): \(error)", log: error)
        default: QueueError(.log, "\(doing): \(error)", log: error)
        }
    }

    public var description: String { message }
}
