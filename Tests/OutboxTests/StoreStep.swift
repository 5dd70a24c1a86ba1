import Outbox

/// One random step of the store model tests (``StoreModelTests``,
/// ``SchedulingModelTests``, ``StoreCheckpointModelTests``): each generates
/// the steps it runs and skips the ones it has no use for.
enum StoreStep: Sendable, CustomStringConvertible {
    /// `parent` counts back from the newest known entry; `duplicateOf`
    /// enqueues again the id of the known entry at that index; `appKey`
    /// names an idempotency key the app supplies.
    case enqueue(scope: Int, parent: Int?, priority: Int, coalesce: Int?, duplicateOf: Int? = nil, appKey: Int? = nil)
    /// Starts an attempt on a due entry.
    case begin(Int)
    /// Starts an attempt on any known entry (most of which may not start).
    case beginAny(Int)
    case succeed(Int)
    case fail(Int)
    case quarantine(Int)
    case conflict(Int)
    case retry(Int)
    /// Retries a quarantined or conflicting entry.
    case retryQuarantined(Int)
    case discard(Int)
    case advance(seconds: Int)
    /// Closes the store under test and opens it again.
    case reopen
    /// Writes a store checkpoint.
    case checkpoint
    /// Compacts the store's log.
    case compact

    var description: String {
        switch self {
        case .enqueue(let scope, let parent, let priority, let coalesce, let duplicate, let appKey):
            "enqueue(scope \(scope), parent \(parent.map(String.init) ?? "-"), prio \(priority), coalesce \(coalesce.map(String.init) ?? "-")"
                + "\(duplicate.map { ", again #\($0)" } ?? "")\(appKey.map { ", key \($0)" } ?? ""))"
        case .begin(let n): "begin(due #\(n))"
        case .beginAny(let n): "begin(any #\(n))"
        case .succeed(let n): "succeed(\(n))"
        case .fail(let n): "fail(\(n))"
        case .quarantine(let n): "quarantine(\(n))"
        case .conflict(let n): "conflict(\(n))"
        case .retry(let n): "retry(\(n))"
        case .retryQuarantined(let n): "retry(quarantined #\(n))"
        case .discard(let n): "discard(\(n))"
        case .advance(let seconds): "advance(\(seconds)s)"
        case .reopen: "reopen"
        case .checkpoint: "checkpoint"
        case .compact: "compact"
        }
    }

    /// The failures the steps record.
    static let transientFailure = OutboxFailure(.transient, httpStatus: 503, message: "503")
    static let permanentFailure = OutboxFailure(.permanent, httpStatus: 400, message: "bad")
    static let conflictFailure = OutboxFailure(.conflict, httpStatus: 409, message: "409")
}
