import OutboxModel
/// A change a store must make durable, in the order given.
package enum StoreChange: Sendable, Hashable {
    /// A new entry's body (the store holds the request).
    case newEntry(OutboxEntryID)
    /// The entry's current state (status, attempts, times, failure).
    case state(OutboxEntryID)
    /// The entry is gone.
    case remove(OutboxEntryID)
    /// The entry's completion mark (success, server id).
    case completion(OutboxEntryID)
    case removeCompletion(OutboxEntryID)
}
