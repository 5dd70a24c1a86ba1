import OutboxLog

/// A log's live state as the oracle sees it: key → value and annotation.
public struct StateModel: Sendable, Hashable {
    /// One live key.
    public struct Entry: Sendable, Hashable {
        public var value: [UInt8]
        public var annotation: [UInt8]?

        public init(value: [UInt8], annotation: [UInt8]? = nil) {
            self.value = value
            self.annotation = annotation
        }
    }

    public var entries: [LogKey: Entry] = [:]

    public init() {}

    /// Whether `key` has a value.
    public func isLive(_ key: LogKey) -> Bool { entries[key] != nil }

    /// Applies `operation`; returns whether it appended anything.
    @discardableResult
    public mutating func apply(_ operation: TortureOperation) -> Bool {
        guard let writes = operation.writes(isLive: isLive) else { return false }
        for write in writes { apply(write) }
        return true
    }

    /// Applies one record with the engine's semantics (`LogIndex.apply`):
    /// a value replaces the value and clears the annotation; an annotation
    /// replaces the annotation of a live key (and is dead on arrival for a
    /// key without a value); a tombstone removes both.
    public mutating func apply(_ write: LogWrite) {
        switch write.kind {
        case .value: entries[write.key] = Entry(value: write.payload)
        case .annotation: if entries[write.key] != nil { entries[write.key]!.annotation = write.payload }
        case .tombstone: entries[write.key] = nil
        }
    }

    /// The keys whose entries differ between `self` and `other`, sorted.
    public func differences(from other: StateModel) -> [LogKey] {
        Set(entries.keys).union(other.entries.keys).filter { entries[$0] != other.entries[$0] }.sorted()
    }
}
