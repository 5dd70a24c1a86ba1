import OutboxModel
/// Reads for the store's query calls: nothing here changes the scheduler.
extension Scheduler {
    func metadata(_ id: OutboxEntryID) -> EntryMetadata? { entries[id] }
    func failure(_ id: OutboxEntryID) -> FailureInfo? { failures[id] }
    func completion(_ id: OutboxEntryID) -> Completion? { completions[id] }

    var summary: OutboxSummary { OutboxSummary(counts: counts.filter { $0.value > 0 }, bytes: bytes.filter { $0.value > 0 }) }

    /// Live entries that depend on `id`.
    func dependents(of id: OutboxEntryID) -> [OutboxEntryID] { dependents[id] ?? [] }

    /// Ids of the entries matching `filter`, in sequence order.
    func ids(matching filter: OutboxFilter) -> [OutboxEntryID] {
        let type = filter.type.map { strings.lookup($0) ?? UInt32.max }
        let scope = filter.scope.map { strings.lookup($0) ?? UInt32.max }
        var matched = entries.values.filter { entry in
            (filter.statuses?.contains(entry.status) ?? true) && (type.map { entry.type == $0 } ?? true)
                && (scope.map { entry.scope == $0 } ?? true)
        }
        matched.sort { $0.sequence < $1.sequence }
        if let limit = filter.limit { matched = Array(matched.prefix(max(0, limit))) }
        return matched.map(\.id)
    }
}
