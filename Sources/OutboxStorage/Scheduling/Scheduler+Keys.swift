import OutboxModel
/// Keys: coalescing keys (which entry a coalescing enqueue may replace) and
/// app-supplied idempotency keys (which entry holds each).
extension Scheduler {
    /// The entry a coalescing enqueue with `key` may replace: the key's
    /// newest live entry, if its status never changed.
    func holder(of key: UInt32) -> OutboxEntryID? {
        guard let newest = keyed[key]?.last, pristine.contains(newest) else { return nil }
        return newest
    }

    mutating func forgetKey(of entry: EntryMetadata) {
        guard entry.coalescing != 0, let at = keyed[entry.coalescing]?.lastIndex(of: entry.id) else { return }
        keyed[entry.coalescing]!.remove(at: at)
        if keyed[entry.coalescing]!.isEmpty { keyed[entry.coalescing] = nil }
    }

    /// Records that the app-supplied `key` belongs to `id`.
    mutating func holdKey(_ key: String, for id: OutboxEntryID) {
        keyHolders[key] = id
        appKeys[id] = key
    }

    /// Forgets `id`'s app-supplied key, unless its completion still holds it.
    mutating func releaseKey(of id: OutboxEntryID) {
        guard completions[id]?.idempotencyKey == nil, let key = appKeys.removeValue(forKey: id) else { return }
        if keyHolders[key] == id { keyHolders[key] = nil }
    }
}
