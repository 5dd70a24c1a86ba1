import Foundation
import OutboxModel

extension StoreCore {
    /// What a spooled enqueue (`LogOutboxStore.enqueue(_:root:partition:configuration:)`)
    /// does before anything is written: checks `request` (``Admission``),
    /// builds and encodes (and, with a key, seals) its body through
    /// `prepare`, with sequence 0 (the queue patches in its own under its
    /// lock), and checks that the whole record fits the spool's log.
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` `.invalidArgument` or `.tooLarge`; nothing
    ///   is written.
    static func admit(
        _ request: OutboxEnqueueRequest, partition: String, configuration: OutboxStoreConfiguration, now: Int64,
        prepare: (EntryBody) throws(OutboxError) -> PreparedBody
    ) throws(OutboxError) -> PreparedBody {
        try Admission.check(request)
        try Admission.payloadSize(request, limit: configuration.log.maximumRecordSize)
        let prepared = try prepareBody(request, partition: partition, configuration: configuration, now: now, prepare: prepare)
        // A spool has no payload files: the whole record goes to its log,
        // whatever the threshold, and must fit it.
        try Admission.recordSize(
            LogBackend.frameSize(ofBody: prepared.encoded?.count ?? prepared.storedBytes),
            limit: configuration.log.maximumRecordSize, entry: request.id)
        return prepared
    }

    /// The body of an admitted `request`, encoded through `prepare` with
    /// sequence 0; `.tooLarge` if its record would not fit the log.
    static func prepareBody(
        _ request: OutboxEnqueueRequest, partition: String, configuration: OutboxStoreConfiguration, now: Int64,
        payloadFile: PayloadFileReference? = nil, prepare: (EntryBody) throws(OutboxError) -> PreparedBody
    ) throws(OutboxError) -> PreparedBody {
        var placeholder = EntryMetadata(
            id: request.id, sequence: 0, status: .pending, priority: Int16(request.priority),
            attempts: 0, maxAttempts: UInt16(request.maxAttempts ?? configuration.defaultMaximumAttempts),
            scope: 0, type: 0, coalescing: 0, when: now, createdAt: request.createdAt.milliseconds, storedBytes: 0)
        placeholder.dependencies = request.dependencies
        var body = EntryBody(request: request, metadata: placeholder, partition: partition)
        body.payloadFile = payloadFile
        let prepared = try prepare(body)
        // A payload above the threshold is not in the record (the log
        // backend put it in a file; the in-memory store keeps it in memory).
        guard !Admission.goesToFile(request.payload.count, configuration) || payloadFile != nil else { return prepared }
        try Admission.recordSize(
            LogBackend.frameSize(ofBody: prepared.encoded?.count ?? prepared.storedBytes),
            limit: configuration.log.maximumRecordSize, entry: request.id)
        return prepared
    }
}
