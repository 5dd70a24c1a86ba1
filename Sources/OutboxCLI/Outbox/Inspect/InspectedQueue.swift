import Foundation
import Outbox

/// The queue `outbox inspect` shows: its current picture (``QueueReader``,
/// read at most every ``lookEvery``), a wait for the next one for pages that
/// follow it, each entry's detail, and the two actions a person may take.
/// One actor, whose requests take turns with the queue (``exclusively(_:)``):
/// the page's requests come at once, and a second open of the queue
/// while the first holds it would be refused as held by another process.
actor InspectedQueue {
    private var queueBusy = false
    private var waitingForQueue: [CheckedContinuation<Void, Never>] = []
    /// Requests held for a newer picture right now.
    private var held = 0
    /// The most requests held at once; past it a request for a newer
    /// picture is answered at once (a page then asks again a moment later).
    static let mostHeld = 8
    private var reader: QueueReader
    private var latest: (view: QueueReader.View, at: ContinuousClock.Instant)?
    let options: OutboxRootOptions
    let user: String
    let actionsAllowed: Bool
    /// How long a picture is reused before the queue is looked at again.
    static let lookEvery: Duration = .milliseconds(250)
    /// The longest a page's request for a newer picture is held.
    static let longestWait: Duration = .seconds(15)

    init(options: OutboxRootOptions, user: String, actionsAllowed: Bool) {
        self.options = options
        self.user = user
        self.actionsAllowed = actionsAllowed
        reader = QueueReader(options: options, user: user, freshFor: 5)
    }

    /// The queue's current picture.
    func look() async throws(CommandFailure) -> QueueReader.View {
        if let fresh = freshPicture { return fresh }
        return try await exclusively { () throws(CommandFailure) in
            // Requests that waited for the one before them take its picture.
            if let fresh = self.freshPicture { return fresh }
            // A copy: an actor's stored value cannot be changed across an await.
            var reader = self.reader
            let view = try await reader.look()
            self.reader = reader
            self.latest = (view, ContinuousClock.now)
            return view
        }
    }

    /// The last picture, while it is younger than ``lookEvery``.
    private var freshPicture: QueueReader.View? {
        guard let latest, ContinuousClock.now - latest.at < Self.lookEvery else { return nil }
        return latest.view
    }

    /// The first picture taken at least a millisecond after `after`
    /// (milliseconds since 1970, as the page received it), or the current
    /// one once ``longestWait`` has passed (a page then simply asks again).
    func look(takenAfter after: Double?) async throws(CommandFailure) -> QueueReader.View {
        guard after != nil, held < Self.mostHeld else { return try await look() }
        held += 1
        defer { held -= 1 }
        let deadline = ContinuousClock.now + Self.longestWait
        while true {
            let view = try await look()
            // Whole milliseconds: the page's copy of the time went through JSON and back.
            guard let after, view.snapshot.takenAt.timeIntervalSince1970 * 1000 < after + 1, ContinuousClock.now < deadline
            else { return view }
            try? await Task.sleep(for: Self.lookEvery)
            if Task.isCancelled { return view }
        }
    }

    /// What is known of one entry: the queue's own record and explanation
    /// when the queue can be opened, and its recent attempts from the
    /// draining process's snapshot.
    func detail(of id: OutboxEntry.ID) async throws(CommandFailure) -> InspectorEntryDetail {
        let view = try await look()
        let detail = InspectorEntryDetail(
            id: id, source: view.source,
            attempts: view.snapshot.attempts.filter { $0.id == id },
            waiting: view.snapshot.waiting.first { $0.id == id })
        guard options.partitions().contains(user) else { return detail }
        return try await exclusively { () throws(CommandFailure) in try await self.read(id, into: detail) }
    }

    private func read(_ id: OutboxEntry.ID, into detail: InspectorEntryDetail) async throws(CommandFailure) -> InspectorEntryDetail {
        var detail = detail
        do {
            try await QueueReader.withQueue(options: options, user: user) { (store) throws(OutboxError) in
                detail.entry = try await store.entry(id)
                detail.explanation = try await store.explain(id, at: Date())
            }
            detail.readFromQueue = true
        } catch let error where error.isLocked {
            detail.readFromQueue = false
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: true)
        }
        return detail
    }

    /// Retries or discards one entry, as `OutboxStore.retry(_:at:)` and
    /// `discard(_:)` do. Needs the queue's lock: refused at once while
    /// another process holds it (a process that drains holds it for long;
    /// waiting would only hold up the page's other requests).
    func act(_ action: InspectorAction, on id: OutboxEntry.ID) async throws(CommandFailure) -> OutboxCascade {
        let cascade = try await exclusively { () throws(CommandFailure) in
            var cascade = OutboxCascade()
            do throws(OutboxError) {
                try await QueueReader.withQueue(options: self.options, user: self.user) { (store) throws(OutboxError) in
                    switch action {
                    case .retry: cascade = try await store.retry(id, at: Date())
                    case .discard: cascade = try await store.discard(id)
                    }
                }
            } catch let error where error.isLocked {
                throw CommandFailure(
                    "another process holds the queue (a drain, or the app): \(action.rawValue) it there, or stop that process first",
                    exitCode: CommandFailure.operationFailed)
            } catch {
                throw CommandFailure.outbox(error, directory: self.options.directory, opening: false)
            }
            return cascade
        }
        latest = nil
        return cascade
    }
}

extension InspectedQueue {
    /// Runs `body` when no other request of this inspector has the queue.
    private func exclusively<Value>(_ body: () async throws(CommandFailure) -> Value) async throws(CommandFailure) -> Value {
        while queueBusy { await withCheckedContinuation { waitingForQueue.append($0) } }
        queueBusy = true
        defer {
            queueBusy = false
            if !waitingForQueue.isEmpty { waitingForQueue.removeFirst().resume() }
        }
        return try await body()
    }
}

/// What a person may do to an entry from the inspector (with `--allow-actions`).
enum InspectorAction: String, CaseIterable, Sendable {
    case retry, discard
}

/// One entry as the inspector shows it.
struct InspectorEntryDetail: Sendable {
    var id: OutboxEntry.ID
    var source: String
    var attempts: [OutboxQueueSnapshot.Attempt]
    var waiting: OutboxQueueSnapshot.Waiting?
    /// Whether the queue itself could be read (not held by another process).
    var readFromQueue = false
    var entry: OutboxEntry?
    var explanation: OutboxExplanation?
}
