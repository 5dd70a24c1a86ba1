import Foundation
import OutboxStorage
import OutboxModel

/// Several writes recorded all or nothing: an album and the photos in it,
/// an order and its lines. Later writes may refer to earlier ones by
/// `local:` reference — carry the ``/OutboxModel/OutboxEntryID`` that ``add(_:id:idempotencyKey:createdAt:)``
/// returns in an `Encodable` action, or put its ``/OutboxModel/OutboxEntryID/localReference``
/// in an endpoint — and each such reference to an earlier entry of the
/// transaction is also made a dependency, so the dependent waits for the
/// server's id.
///
/// ```swift
/// var transaction = OutboxTransaction()
/// let album = try transaction.add(CreateAlbum(title: "Trip"))
/// try transaction.add(AddPhoto(album: album, caption: "Beach"))
/// try await dispatcher.enqueue(transaction)     // both, in one write, or neither
/// ```
public struct OutboxTransaction: Sendable {
    /// The requests, in the order they were added.
    public private(set) var requests: [OutboxEnqueueRequest] = []
    private var ids: Set<OutboxEntry.ID> = []

    public init() {}

    /// Adds `action` (its payload is encoded now) and returns its entry's
    /// id, for the writes added after it.
    ///
    /// - Throws: the payload's encoding error.
    @discardableResult
    public mutating func add<Action: OutboxAction>(
        _ action: Action, id: OutboxEntry.ID = OutboxEntry.ID(), idempotencyKey: String? = nil, createdAt: Date = Date()
    ) throws -> OutboxEntry.ID {
        add(try OutboxEnqueueRequest(action, id: id, idempotencyKey: idempotencyKey, createdAt: createdAt))
    }

    /// Adds a request built by hand and returns its id.
    @discardableResult
    public mutating func add(_ request: OutboxEnqueueRequest) -> OutboxEntry.ID {
        var request = request
        // A reference to an earlier entry of the transaction is a dependency:
        // sent before the server has the parent's id, it could not resolve.
        let earlier = LocalReferenceRemapper.references(endpoint: request.endpoint, payload: request.payload)
            .filter { ids.contains($0) && !request.dependencies.contains($0) }
        request.dependencies += earlier.sorted()
        requests.append(request)
        ids.insert(request.id)
        return request.id
    }

    public var isEmpty: Bool { requests.isEmpty }
}

extension OutboxDispatcher {
    /// Records every write of `transaction` all or nothing, in one write:
    /// after it returns, all are recorded (the commit point of each); if it
    /// throws, none is, and nothing was sent. Publishes
    /// ``/OutboxModel/OutboxEvent/enqueued(_:)`` for each and flushes in the background.
    ///
    /// - Returns: one result per request, in order (a request already
    ///   enqueued is a ``/OutboxModel/OutboxEnqueueResult/duplicate(_:status:)``).
    /// - Throws: the first refusal (``/OutboxModel/OutboxError``), nothing written; a
    ///   store without atomic batches refuses more than one write.
    @discardableResult
    public func enqueue(_ transaction: OutboxTransaction) async throws(OutboxError) -> [OutboxEnqueueResult] {
        if let configurationError { throw configurationError }
        let results = try await store.enqueue(transaction.requests)
        for result in results { announceEnqueued(result) }
        afterEnqueue(transaction.requests.map(\.id))
        return results
    }

    /// Builds a transaction with `build` and records it, as `enqueue(_:)` does
    /// with an ``OutboxTransaction``.
    ///
    /// ```swift
    /// try await dispatcher.transaction { transaction in
    ///     let album = try transaction.add(CreateAlbum(title: "Trip"))
    ///     try transaction.add(AddPhoto(album: album, caption: "Beach"))
    /// }
    /// ```
    @discardableResult
    public func transaction(
        _ build: (inout OutboxTransaction) throws -> Void
    ) async throws(OutboxError) -> [OutboxEnqueueResult] {
        var transaction = OutboxTransaction()
        do { try build(&transaction) } catch let error as OutboxError { throw error } catch {
            throw OutboxError(.invalidArgument, "an action's payload could not be encoded: \(error)")
        }
        return try await enqueue(transaction)
    }
}
