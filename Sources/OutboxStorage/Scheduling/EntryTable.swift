import OutboxCollections
import OutboxModel

/// The scheduler's entries by id, packed: 72 bytes an entry (the 16-byte id
/// and ``PackedEntry``) in a ``PackedTable``, plus 10–15 bytes of its slot
/// table. Dependencies, which most entries do not have, live in a side table
/// keyed by id, so an entry without them pays nothing for the array.
///
/// Reads and writes go through ``EntryMetadata``, the scheduler's working
/// view of an entry, so the scheduler's rules do not depend on the layout.
package struct EntryTable: Sendable {
    private var table = PackedTable<OutboxEntryID, PackedEntry>()
    private var dependencies: [OutboxEntryID: [OutboxEntryID]] = [:]

    var count: Int { table.count }

    init() {}

    /// A table of the `count` entries `next(0)`, `next(1)`, … (asked for in
    /// that order), built at once (`PackedTable.init(loadingUnique:_:)`):
    /// `nil` if two have the same id.
    ///
    /// - Complexity: O(*n*) on average.
    init?<Failure: Error>(loadingUnique count: Int, _ next: (Int) throws(Failure) -> EntryMetadata) throws(Failure) {
        var dependencies: [OutboxEntryID: [OutboxEntryID]] = [:]
        let loaded = try PackedTable<OutboxEntryID, PackedEntry>(loadingUnique: count) { index throws(Failure) in
            let metadata = try next(index)
            let packed = PackedEntry(metadata)
            if packed.hasDependencies { dependencies[metadata.id] = metadata.dependencies }
            return .init(key: metadata.id, value: packed)
        }
        guard let loaded else { return nil }
        table = loaded
        self.dependencies = dependencies
    }

    subscript(id: OutboxEntryID) -> EntryMetadata? {
        get { table[id].map { EntryMetadata(id: id, packed: $0, dependencies: $0.hasDependencies ? dependencies[id] : nil) } }
        set {
            guard let newValue else {
                if table.removeValue(forKey: id)?.hasDependencies == true { dependencies[id] = nil }
                return
            }
            set(newValue)
        }
    }

    /// Stores `metadata` under its id; returns whether the id was new (one
    /// probe of the table, where a look-up and then a store take two).
    @discardableResult
    mutating func set(_ metadata: EntryMetadata) -> Bool {
        let packed = PackedEntry(metadata)
        let replaced = table.updateValue(packed, forKey: metadata.id)
        if let replaced, replaced.hasDependencies, !packed.hasDependencies { dependencies[metadata.id] = nil }
        if packed.hasDependencies { dependencies[metadata.id] = metadata.dependencies }
        return replaced == nil
    }

    func contains(_ id: OutboxEntryID) -> Bool { table.contains(id) }

    /// Every entry, in no particular order.
    var values: [EntryMetadata] {
        var result: [EntryMetadata] = []
        result.reserveCapacity(count)
        forEach { result.append($0) }
        return result
    }

    /// Every id, in no particular order.
    var keys: [OutboxEntryID] { table.keys }

    /// Every entry's id and packed fields, in no particular order, without
    /// building an ``EntryMetadata`` for each (its optional dependencies
    /// array makes every copy a call through its value witness): for the
    /// loops over every entry that a load runs, which read scalar fields.
    func forEachPacked(_ body: (OutboxEntryID, PackedEntry) throws -> Void) rethrows {
        try table.forEach { element in try body(element.key, element.value) }
    }

    package func forEach(_ body: (EntryMetadata) throws -> Void) rethrows {
        try table.forEach { element in
            try body(
                EntryMetadata(
                    id: element.key, packed: element.value,
                    dependencies: element.value.hasDependencies ? dependencies[element.key] : nil))
        }
    }
}

/// An entry's scheduling fields as the table stores them: 56 bytes.
struct PackedEntry: Sendable, Hashable {
    var sequence: UInt64
    var when: Int64
    var createdAt: Int64
    var storedBytes: UInt32
    var scope: UInt32
    var type: UInt32
    var coalescing: UInt32
    var version: UInt32
    var priority: Int16
    var attempts: UInt16
    var maxAttempts: UInt16
    var status: OutboxStatus
    var hasDependencies: Bool

    init(_ metadata: EntryMetadata) {
        sequence = metadata.sequence
        when = metadata.when
        createdAt = metadata.createdAt
        storedBytes = metadata.storedBytes
        scope = metadata.scope
        type = metadata.type
        coalescing = metadata.coalescing
        version = metadata.version
        priority = metadata.priority
        attempts = metadata.attempts
        maxAttempts = metadata.maxAttempts
        status = metadata.status
        hasDependencies = !(metadata.dependencies?.isEmpty ?? true)
    }
}

extension EntryMetadata {
    init(id: OutboxEntryID, packed: PackedEntry, dependencies: [OutboxEntryID]?) {
        self.init(
            id: id, sequence: packed.sequence, status: packed.status, priority: packed.priority,
            attempts: packed.attempts, maxAttempts: packed.maxAttempts, scope: packed.scope, type: packed.type,
            coalescing: packed.coalescing, when: packed.when, createdAt: packed.createdAt, storedBytes: packed.storedBytes,
            dependencies: dependencies, version: packed.version)
    }
}
