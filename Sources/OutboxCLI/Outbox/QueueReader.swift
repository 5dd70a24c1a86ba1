import Foundation
import Outbox

/// Where `outbox top` and `outbox inspect` get each picture of the queue: the snapshot its
/// draining process writes, while it is fresh; otherwise the queue itself,
/// opened for a moment; and when another process holds the queue and writes
/// no snapshot, what can be said about that.
struct QueueReader {
    let options: OutboxRootOptions
    let user: String
    /// A snapshot older than this (seconds) is not from a live process.
    let freshFor: TimeInterval
    /// The last picture read from the queue itself, reused for
    /// ``rereadAfter`` seconds after the read ended, or four times as long
    /// as the read took if that is longer: opening a queue reads its
    /// records and holds its lock while it does, so a large queue is left
    /// free at least four fifths of the time (a drain started meanwhile
    /// then finds it free within its own patience).
    private var lastRead: (view: View, endedAt: Date, took: TimeInterval)?
    static let rereadAfter: TimeInterval = 2

    init(options: OutboxRootOptions, user: String, freshFor: TimeInterval) {
        self.options = options
        self.user = user
        self.freshFor = freshFor
    }

    struct View {
        var snapshot: OutboxQueueSnapshot
        var source: String
    }

    mutating func look() async throws(CommandFailure) -> View {
        let now = Date()
        let written: OutboxQueueSnapshot?
        do {
            written = try await LogOutboxStore.snapshot(
                root: options.root, partition: user, configuration: options.configuration(create: false))
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: true)
        }
        if let written, written.dispatcher != .stopped, now.timeIntervalSince(written.takenAt) <= freshFor {
            return View(snapshot: written, source: "process \(written.processID), \(Self.ago(written.takenAt, now))")
        }
        // The root may have gone since the command started: say so, rather than show an empty queue.
        try options.requireExistingDirectory()
        guard options.partitions().contains(user) else {
            return View(snapshot: Self.empty(at: now), source: "no queue for this user")
        }
        if let lastRead, now.timeIntervalSince(lastRead.endedAt) < max(Self.rereadAfter, 4 * lastRead.took),
            written?.takenAt ?? .distantPast <= lastRead.endedAt
        {
            return lastRead.view
        }
        do {
            var read: OutboxQueueSnapshot?
            try await Self.withQueue(options: options, user: user) { (store) throws(OutboxError) in
                read = try await Self.read(store, at: now, history: written)
            }
            let source = "read from the queue; no process drains it"
                + (written.map { ", the last one stopped \(Self.ago($0.takenAt, now))" } ?? "")
            let view = View(snapshot: read ?? Self.empty(at: now), source: source)
            let ended = Date()
            lastRead = (view, ended, ended.timeIntervalSince(now))
            return view
        } catch let error where error.isLocked {
            guard let written else {
                return View(
                    snapshot: Self.empty(at: now),
                    source: "held by another process, which has written no snapshot yet (snapshotInterval; outbox drain writes one)")
            }
            return View(
                snapshot: written,
                source: "process \(written.processID), \(Self.ago(written.takenAt, now)): it holds the queue but writes no snapshot now")
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: true)
        }
    }

    /// Opens `user`'s queue without waiting for another process that holds
    /// it, runs `body`, and closes it — also when `body` fails, so that a
    /// failed read never leaves the queue locked.
    static func withQueue(
        options: OutboxRootOptions, user: String, _ body: (LogOutboxStore) async throws(OutboxError) -> Void
    ) async throws(OutboxError) {
        let store = try await LogOutboxStore.open(
            root: options.root, partition: user, configuration: options.configuration(create: false))
        do {
            try await body(store)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    /// The queue as it is on disk, with the activity of the last snapshot written, if any.
    private static func read(
        _ store: LogOutboxStore, at now: Date, history: OutboxQueueSnapshot?
    ) async throws(OutboxError) -> OutboxQueueSnapshot {
        let summary = try await store.summary()
        let waiting = try await store.oldestWaiting { (id) throws(OutboxError) in try await store.explain(id, at: now) }
        return OutboxQueueSnapshot(
            takenAt: now, processID: ProcessInfo.processInfo.processIdentifier, dispatcher: .stopped, summary: summary,
            stalledSince: nil, seconds: history?.seconds ?? [], latencyP50: history?.latencyP50,
            latencyP95: history?.latencyP95, waiting: waiting, failures: history?.failures ?? [], attempts: history?.attempts ?? [])
    }

    private static func empty(at now: Date) -> OutboxQueueSnapshot {
        OutboxQueueSnapshot(
            takenAt: now, processID: 0, dispatcher: .stopped, summary: OutboxSummary(), stalledSince: nil, seconds: [],
            waiting: [], failures: [])
    }

    private static func ago(_ date: Date, _ now: Date) -> String {
        "snapshot \(String(format: "%.1f", max(0, now.timeIntervalSince(date)))) s old"
    }
}

extension OutboxError {
    /// Another process holds the queue open.
    var isLocked: Bool { code == .busy || storage?.code == .locked }
}
