import Foundation
import Logging
import OutboxLocking

/// Why the demo stopped before its queue was drained.
struct DemoFailure: Error, CustomStringConvertible {
    var message: String
    /// Whether it ran out of time (the caller adds what remained).
    var isDeadline = false

    init(_ message: String) { self.message = message }

    static var deadlinePassed: DemoFailure {
        var failure = DemoFailure("the deadline passed")
        failure.isDeadline = true
        return failure
    }

    var description: String { message }
}

/// The first error the dispatcher logged while armed: the dispatcher reports
/// store failures only in its log, and the demo must not keep waiting for a
/// queue that cannot drain. Disarmed while the app is being killed on
/// purpose (its disk "dies" and every store call fails).
final class DemoFailures: Sendable {
    private let state = Locked<(armed: Bool, first: String?)>((true, nil))

    var first: String? { state.withLock { $0.first } }

    func arm(_ armed: Bool) { state.withLock { $0.armed = armed } }

    func record(_ message: String) {
        state.withLock { state in
            if state.armed && state.first == nil { state.first = message }
        }
    }

    /// A logger whose errors (and worse) are recorded here; nothing is printed.
    func logger(label: String) -> Logger {
        Logger(label: label, factory: { _ in Handler(failures: self) })
    }

    struct Handler: LogHandler {
        let failures: DemoFailures
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level = .error

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.level >= .error else { return }
            let details = (event.metadata ?? [:]).merging(metadata) { first, _ in first }
                .sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            failures.record("the dispatcher failed: \(event.message)" + (details.isEmpty ? "" : " (\(details))"))
        }
    }
}
