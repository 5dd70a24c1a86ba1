import Foundation
import OutboxLog
import OutboxModel

/// One record of a spool on its way into the queue: an entry, or a record
/// that does not read as one (its CRC held, so it is what the writer wrote
/// — or someone crafted), which is set aside rather than trusted or
/// allowed to stop the rest of its spool.
enum SpooledRecord: Sendable {
    case entry(SpooledEntry)
    case unreadable(UnreadableSpoolRecord)

    var spool: SpoolID {
        switch self {
        case .entry(let entry): entry.spool
        case .unreadable(let record): record.spool
        }
    }

    /// The spool log's sequence number of the record.
    var sequence: UInt64 {
        switch self {
        case .entry(let entry): entry.sequence
        case .unreadable(let record): record.sequence
        }
    }

    /// The entry's id, if the record reads as one.
    var id: OutboxEntryID? {
        if case .entry(let entry) = self { return entry.body.id }
        return nil
    }

    /// When the app created it (ms since 1970); an unreadable record goes
    /// as soon as its spool reaches it.
    var createdAt: Int64 {
        if case .entry(let entry) = self { return entry.body.createdAt }
        return .min
    }

    var dependencies: [OutboxEntryID] {
        if case .entry(let entry) = self { return entry.body.dependencies }
        return []
    }
}

/// One spooled entry on its way into the queue.
struct SpooledEntry: Sendable {
    var spool: SpoolID
    /// The spool log's sequence number of the entry's record.
    var sequence: UInt64
    var body: EntryBody
    /// The body in the queue's stored form (sealed if the queue is),
    /// reused as is, its sequence patched in by the queue: the spool's own
    /// record when the spool is in the queue's format, else re-encoded.
    var stored: [UInt8]

    /// The request a direct enqueue of this entry would have made.
    var request: OutboxEnqueueRequest {
        OutboxEnqueueRequest(
            id: body.id, idempotencyKey: body.keySuppliedByApp ? body.idempotencyKey : nil, type: body.type,
            method: body.method, endpoint: body.endpoint, payload: body.payload, headers: body.headers,
            scope: body.scope, dependencies: body.dependencies, priority: Int(body.priority),
            coalescingKey: body.coalescingKey, maxAttempts: Int(body.maxAttempts),
            createdAt: Date(milliseconds: body.createdAt))
    }
}

/// A spool record that does not decode as an entry of the queue.
struct UnreadableSpoolRecord: Sendable {
    var spool: SpoolID
    var sequence: UInt64
    /// The record's key and value as the spool holds them.
    var key: LogKey
    var stored: [UInt8]
    /// Why it does not read.
    var error: OutboxError
}
