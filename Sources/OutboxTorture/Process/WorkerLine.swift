import Foundation
import OutboxLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lines a worker process prints to its parent, one event per line.
///
/// ```
/// ready                      the log is open (recovery done)
/// begin 17                   step 17 (a compaction or sync) starts
/// ack 17                     step 17 returned: acknowledged
/// fail 17 io <message>       step 17 threw (libfiu runs); the worker then probes
/// poison ok | poison broken <detail>   whether the log refused the next append
/// open-failed <code> <message>          the open threw
/// done                       every step acknowledged and the log closed
/// enqueued <id> <key>        (outbox worker) an enqueue returned: id and idempotency key
/// drained                    (outbox worker) nothing left to send
/// ```
public enum WorkerLine: Sendable, Hashable {
    case ready
    case begin(Int)
    case ack(Int)
    case fail(Int, code: String, message: String)
    case poison(ok: Bool, detail: String)
    case openFailed(code: String, message: String)
    case done
    case enqueued(id: String, key: String)
    case drained
    /// Every entry the reopened store holds was explained by a reason its status allows (`explained N`).
    case explained(Int)
    /// Anything else (a stray line is reported, never ignored silently).
    case unknown(String)

    public init(parsing line: String) {
        let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true).map(String.init)
        switch (parts.first, parts.count) {
        case ("ready", 1): self = .ready
        case ("done", 1): self = .done
        case ("drained", 1): self = .drained
        case ("begin", 2): self = Int(parts[1]).map(WorkerLine.begin) ?? .unknown(line)
        case ("ack", 2): self = Int(parts[1]).map(WorkerLine.ack) ?? .unknown(line)
        case ("fail", 3...):
            self = Int(parts[1]).map { .fail($0, code: parts[2], message: parts.count > 3 ? parts[3] : "") } ?? .unknown(line)
        case ("poison", 2...): self = .poison(ok: parts[1] == "ok", detail: parts.dropFirst(2).joined(separator: " "))
        case ("open-failed", 2...): self = .openFailed(code: parts[1], message: parts.dropFirst(2).joined(separator: " "))
        case ("enqueued", 3): self = .enqueued(id: parts[1], key: parts[2])
        case ("explained", 2): self = Int(parts[1]).map(WorkerLine.explained) ?? .unknown(line)
        default: self = .unknown(line)
        }
    }

    public var text: String {
        switch self {
        case .ready: "ready"
        case .begin(let step): "begin \(step)"
        case .ack(let step): "ack \(step)"
        case .fail(let step, let code, let message): "fail \(step) \(code) \(Self.oneLine(message))"
        case .poison(let ok, let detail): ok ? "poison ok" : "poison broken \(Self.oneLine(detail))"
        case .openFailed(let code, let message): "open-failed \(code) \(Self.oneLine(message))"
        case .done: "done"
        case .enqueued(let id, let key): "enqueued \(id) \(key)"
        case .drained: "drained"
        case .explained(let count): "explained \(count)"
        case .unknown(let line): line
        }
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// An error code as one word: "io", "poisoned", "corruption", …
    static func word(_ code: OutboxLogError.Code) -> String {
        let names: [(OutboxLogError.Code, String)] = [
            (.io, "io"), (.corruption, "corruption"), (.unsupportedFormat, "unsupported-format"), (.locked, "locked"),
            (.poisoned, "poisoned"), (.closed, "closed"), (.recordTooLarge, "record-too-large"),
            (.invalidArgument, "invalid-argument"), (.notFound, "not-found"), (.compactionInProgress, "compaction-in-progress"),
        ]
        return names.first { $0.0 == code }?.1 ?? code.description.replacingOccurrences(of: " ", with: "-")
    }

    /// Any other error code as one word.
    static func word(_ code: some CustomStringConvertible) -> String {
        code.description.replacingOccurrences(of: " ", with: "-").lowercased()
    }

    /// Writes the line to standard output at once, with one `write(2)`.
    ///
    /// Deliberately synchronous, even from async code: the line must be in
    /// the pipe before the worker starts its next step, or the parent could
    /// count one step too few as acknowledged when it kills the worker. A
    /// line is far below `PIPE_BUF`, so the write is atomic, and the parent
    /// drains the pipe continuously, so it never waits.
    public func send() {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return  // the parent is gone; nothing left to report to
            }
            offset += written
        }
    }
}
