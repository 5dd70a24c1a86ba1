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
    /// ``rereadAfter`` seconds: opening a queue reads its records, and holds
    /// its lock while it does.
    private var lastRead: (view: View, at: Date)?
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
        guard options.partitions().contains(user) else {
            return View(snapshot: Self.empty(at: now), source: "no queue for this user")
        }
        if let lastRead, now.timeIntervalSince(lastRead.at) < Self.rereadAfter, written?.takenAt ?? .distantPast <= lastRead.at {
            return lastRead.view
        }
        do {
            let store = try await LogOutboxStore.open(
                root: options.root, partition: user, configuration: options.configuration(create: false))
            let read = try await Self.read(store, at: now, history: written)
            try await store.close()
            let source = "read from the queue; no process drains it"
                + (written.map { ", the last one stopped \(Self.ago($0.takenAt, now))" } ?? "")
            let view = View(snapshot: read, source: source)
            lastRead = (view, now)
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
