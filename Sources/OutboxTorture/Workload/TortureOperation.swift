import OutboxLog

/// One step of a torture workload.
///
/// Some steps depend on the state they meet (annotate a key only if it has
/// a value, delete writes nothing if it has none). Both the process that
/// runs a workload and the oracle that checks it resolve a step through
/// ``writes(isLive:)``, so they cannot disagree about what was written.
public enum TortureOperation: Sendable, Hashable, CustomStringConvertible {
    /// One record of a ``batch(_:_:)``.
    public enum BatchItem: Sendable, Hashable {
        /// Set the key's value.
        case value(LogKey, [UInt8])
        /// Annotate the key if it has a value at that point of the batch;
        /// otherwise set its value.
        case annotateOrValue(LogKey, [UInt8])
        /// Delete the key (a tombstone is written even if it has no value).
        case tombstone(LogKey)
    }

    /// Set the key's value (and clear its annotation).
    case put(LogKey, [UInt8], Durability)
    /// Annotate the key's value if it has one; otherwise set its value.
    case annotateOrPut(LogKey, [UInt8], Durability)
    /// Delete the key; `OutboxLog.delete` writes nothing if it has no value.
    case delete(LogKey, Durability)
    /// Several records as one atomic batch (keys may repeat).
    case batch([BatchItem], Durability)
    /// `flush()`: everything appended so far is written.
    case flush
    /// `sync()`: everything appended so far is durable.
    case sync
    /// `compact()`: seals the active segment and rewrites sealed ones.
    case compact

    /// The records this step appends in a state where `isLive` tells which
    /// keys have a value, or `nil` if it appends nothing.
    public func writes(isLive: (LogKey) -> Bool) -> [LogWrite]? {
        switch self {
        case .put(let key, let value, _):
            return [.value(key, value)]
        case .annotateOrPut(let key, let value, _):
            return [isLive(key) ? .annotation(key, value) : .value(key, value)]
        case .delete(let key, _):
            return isLive(key) ? [.tombstone(key)] : nil
        case .batch(let items, _):
            // Liveness changes inside the batch, exactly as the engine's
            // validation sees it (a value earlier in the batch counts).
            var changed: [LogKey: Bool] = [:]
            func live(_ key: LogKey) -> Bool { changed[key] ?? isLive(key) }
            return items.map { item -> LogWrite in
                switch item {
                case .value(let key, let value):
                    changed[key] = true
                    return .value(key, value)
                case .annotateOrValue(let key, let value):
                    if live(key) { return .annotation(key, value) }
                    changed[key] = true
                    return .value(key, value)
                case .tombstone(let key):
                    changed[key] = false
                    return .tombstone(key)
                }
            }
        case .flush, .sync, .compact:
            return nil
        }
    }

    /// What the step's acknowledgement promises for itself and every step
    /// before it, given whether it appended anything: `.written` survives
    /// `kill -9`, `.durable` survives power loss, `nil` promises nothing.
    ///
    /// A compaction is no barrier: it seals the active segment only when
    /// that segment holds dead records, so it may return with earlier
    /// buffered records still in memory.
    public func promise(appended: Bool) -> Durability? {
        switch self {
        case .put(_, _, let durability), .annotateOrPut(_, _, let durability), .batch(_, let durability):
            durability == .buffered ? nil : durability
        case .delete(_, let durability):
            appended && durability != .buffered ? durability : nil
        case .flush: .written
        case .sync: .durable
        case .compact: nil
        }
    }

    /// The durability the step's append asks for, if it appends.
    public var durability: Durability? {
        switch self {
        case .put(_, _, let d), .annotateOrPut(_, _, let d), .delete(_, let d), .batch(_, let d): d
        case .flush, .sync, .compact: nil
        }
    }

    public var isCompaction: Bool { self == .compact }

    public var description: String {
        switch self {
        case .put(let key, let value, let d): "put \(key) \(value.count)B \(d)"
        case .annotateOrPut(let key, let value, let d): "annotate-or-put \(key) \(value.count)B \(d)"
        case .delete(let key, let d): "delete \(key) \(d)"
        case .batch(let items, let d): "batch of \(items.count) \(d)"
        case .flush: "flush"
        case .sync: "sync"
        case .compact: "compact"
        }
    }
}
