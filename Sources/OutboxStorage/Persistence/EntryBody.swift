import Foundation
import OutboxModel

/// The immutable part of an entry, written once at enqueue and never
/// rewritten on retries.
package struct EntryBody: Sendable, Hashable {
    package var id: OutboxEntryID
    package var sequence: UInt64
    package var createdAt: Int64
    var priority: Int16
    package var maxAttempts: UInt16
    package var type: String
    package var scope: String?
    package var coalescingKey: String?
    package var partition: String
    package var dependencies: [OutboxEntryID]
    var idempotencyKey: String
    /// The app passed ``idempotencyKey`` (rather than leaving it to be
    /// derived from the partition and the id): the store then also finds the
    /// entry by its key.
    package var keySuppliedByApp: Bool
    package var method: String
    package var endpoint: String
    package var headers: [String: String]
    package var payload: [UInt8]
    /// The file that holds the payload instead (``payload`` is then empty):
    /// a body above the store's `largePayloadThreshold`.
    package var payloadFile: PayloadFileReference? = nil
    /// What reads that file back, set by the store that read the body.
    var largePayload: OutboxLargePayload? = nil

    init(request: OutboxEnqueueRequest, metadata: EntryMetadata, partition: String) {
        id = request.id
        sequence = metadata.sequence
        createdAt = request.createdAt.milliseconds
        priority = metadata.priority
        maxAttempts = metadata.maxAttempts
        type = request.type
        scope = request.scope
        coalescingKey = request.coalescingKey
        self.partition = partition
        dependencies = request.dependencies
        idempotencyKey = request.idempotencyKey ?? OutboxEntry.derivedIdempotencyKey(partition: partition, id: request.id)
        keySuppliedByApp = request.idempotencyKey != nil
        method = request.method
        endpoint = request.endpoint
        headers = request.headers
        payload = request.payload
    }

    package init(
        id: OutboxEntryID, sequence: UInt64, createdAt: Int64, priority: Int16, maxAttempts: UInt16, type: String,
        scope: String?, coalescingKey: String?, partition: String, dependencies: [OutboxEntryID],
        idempotencyKey: String, keySuppliedByApp: Bool, method: String, endpoint: String, headers: [String: String],
        payload: [UInt8], payloadFile: PayloadFileReference? = nil
    ) {
        self.id = id
        self.sequence = sequence
        self.createdAt = createdAt
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.type = type
        self.scope = scope
        self.coalescingKey = coalescingKey
        self.partition = partition
        self.dependencies = dependencies
        self.idempotencyKey = idempotencyKey
        self.keySuppliedByApp = keySuppliedByApp
        self.method = method
        self.endpoint = endpoint
        self.headers = headers
        self.payload = payload
        self.payloadFile = payloadFile
    }

    /// An approximation of what the entry costs in storage, for limits and
    /// summaries; the same in every store.
    var storedBytes: Int {
        64 + type.utf8.count + (scope?.utf8.count ?? 0) + (coalescingKey?.utf8.count ?? 0) + partition.utf8.count
            + 16 * dependencies.count + idempotencyKey.utf8.count + method.utf8.count + endpoint.utf8.count
            + headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 8 } + payload.count
            + Int(payloadFile?.fileSize ?? 0)
    }

    /// The public view: this body with `metadata`'s state.
    func entry(metadata: EntryMetadata, failure: FailureInfo?, completion: Completion?, strings: StringInterner) -> OutboxEntry {
        OutboxEntry(
            id: id, idempotencyKey: idempotencyKey, type: type, method: method, endpoint: endpoint, payload: payload,
            headers: headers, partition: partition, scope: scope, dependencies: dependencies,
            priority: Int(priority), sequence: sequence, coalescingKey: coalescingKey, status: metadata.status,
            attempts: Int(metadata.attempts), maxAttempts: Int(metadata.maxAttempts),
            nextAttemptAt: Date(milliseconds: metadata.when == EntryMetadata.immediately ? createdAt : metadata.when),
            lastFailure: failure?.last, createdAt: Date(milliseconds: createdAt),
            syncedAt: completion.map { Date(milliseconds: $0.syncedAt) }, serverID: completion?.serverID,
            storedBytes: Int(metadata.storedBytes),
            firstAnswerAt: failure?.firstAnsweredAt.map(Date.init(milliseconds:)),
            outcomeUnknownSince: failure?.outcomeUnknownSince.map(Date.init(milliseconds:)), largePayload: largePayload)
    }
}
