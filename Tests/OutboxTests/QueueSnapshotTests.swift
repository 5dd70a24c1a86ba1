import Crypto
import Foundation
import SystemPackage
import Testing

@testable import Outbox

/// The queue's snapshot: what the dispatcher's attempts did, the file
/// beside the queue (plain, sealed, and hostile), and the dispatcher writing it.
@Suite("Queue snapshots", .timeLimit(.minutes(5)))
struct QueueSnapshotTests {
    private static let start = Date(timeIntervalSince1970: 1_800_000_000)

    private static func failure(_ status: Int) -> OutboxFailure {
        OutboxFailure(.transient, httpStatus: status, message: "busy")
    }

    @Test("activity: deliveries and failures per second, latency from sending to outcome, causes most frequent first")
    func activity() throws {
        var activity = QueueActivity()
        let ids = (0..<4).map { _ in OutboxEntry.ID() }
        for (offset, id) in ids.enumerated() {
            activity.note(.sending(id, attempt: 1), at: Self.start.addingTimeInterval(Double(offset) * 0.01))
        }
        activity.note(.delivered(ids[0], serverID: nil), at: Self.start.addingTimeInterval(0.1))  // 100 ms
        activity.note(.replayed(ids[1], serverID: nil), at: Self.start.addingTimeInterval(0.31))  // 300 ms
        activity.note(.waitingToRetry(ids[2], at: Self.start, failure: Self.failure(503)), at: Self.start.addingTimeInterval(1.52))
        activity.note(.quarantined(ids[3], failure: Self.failure(400)), at: Self.start.addingTimeInterval(1.53))
        // A dependent quarantined with its parent made no attempt: not a failure.
        activity.note(
            .quarantined(OutboxEntry.ID(), failure: OutboxFailure(.dependency(.quarantined(ids[3])))),
            at: Self.start.addingTimeInterval(1.6))

        let now = Self.start.addingTimeInterval(2)
        let seconds = activity.seconds(now: now)
        #expect(seconds.map(\.delivered) == [2, 0])
        #expect(seconds.map(\.failed) == [0, 2])
        #expect(seconds[0].at == Self.start)
        // The first second's attempts took 100 and 300 ms; the next two 1,500 ms each.
        let first = try #require(seconds[0].latencyP50)
        let firstP95 = try #require(seconds[0].latencyP95)
        #expect(abs(first - 100) < 1 && abs(firstP95 - 300) < 1)
        let latency = activity.latency(now: now)
        let p50 = try #require(latency.p50)
        let p95 = try #require(latency.p95)
        #expect(abs(p50 - 300) < 1 && abs(p95 - 1500) < 1)
        #expect(activity.failures(now: now).map(\.cause).sorted() == ["transient, HTTP 400", "transient, HTTP 503"])
        #expect(activity.failures(now: now).allSatisfy { $0.count == 1 })

        // Each ended attempt, newest first, with its number, outcome and failure; the dependent made none.
        let attempts = activity.attempts()
        #expect(attempts.map(\.id) == [ids[3], ids[2], ids[1], ids[0]])
        #expect(attempts.map(\.outcome) == [.quarantined, .waitingToRetry, .delivered, .delivered])
        #expect(attempts.allSatisfy { $0.attempt == 1 && $0.endedAt >= $0.startedAt })
        #expect(attempts[0].cause == "transient, HTTP 400" && attempts[0].detail?.contains("busy") == true)
        #expect(attempts[2].cause == nil && attempts[2].detail == nil)

        // Five minutes later, the old seconds are gone.
        let later = Self.start.addingTimeInterval(Double(OutboxQueueSnapshot.secondsKept) + 5)
        #expect(activity.seconds(now: later).isEmpty)
        #expect(activity.failures(now: later).isEmpty)
    }

    @Test("the attempts kept are the newest ones, at most attemptsKept, however many end")
    func attemptsBounded() {
        var activity = QueueActivity()
        let ids = (0..<(OutboxQueueSnapshot.attemptsKept + 50)).map { _ in OutboxEntry.ID() }
        for (offset, id) in ids.enumerated() {
            let at = Self.start.addingTimeInterval(Double(offset) * 0.001)
            activity.note(.sending(id, attempt: offset + 1), at: at)
            activity.note(.delivered(id, serverID: nil), at: at)
        }
        let kept = activity.attempts()
        #expect(kept.count == OutboxQueueSnapshot.attemptsKept)
        #expect(kept.first?.id == ids.last && kept.last?.id == ids[50])
        #expect(kept.first?.attempt == ids.count)
    }

    private static func snapshot(why: String = "due: it goes with the next drain") -> OutboxQueueSnapshot {
        OutboxQueueSnapshot(
            takenAt: start, processID: 42, dispatcher: .running,
            summary: OutboxSummary(counts: [.pending: 3, .quarantined: 1], oldestUnsentAt: start),
            stalledSince: nil,
            seconds: [OutboxQueueSnapshot.Second(at: start, delivered: 5, failed: 1, latencyP50: 12, latencyP95: 40)],
            latencyP50: 12, latencyP95: 40,
            waiting: [OutboxQueueSnapshot.Waiting(id: OutboxEntry.ID(), status: .pending, enqueuedAt: start, reason: "due", why: why)],
            failures: [OutboxQueueSnapshot.FailureCount(cause: "server, HTTP 503", count: 1, lastAt: start)])
    }

    @Test("a plain queue's snapshot reads back as written; a root without the queue has none")
    func plainRoundTrip() async throws {
        let root = TemporaryRoot()
        let store = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: quietConfiguration())
        let written = Self.snapshot()
        try await store.publishSnapshot(written)
        #expect(try await LogOutboxStore.snapshot(root: root.path, partition: "u") == written)
        #expect(try await LogOutboxStore.snapshot(root: root.path, partition: "someone else") == nil)
        let file = store.directory.appending(LogOutboxStore.snapshotFileName)
        #expect(try FileManager.default.attributesOfItem(atPath: file.string)[.posixPermissions] as? Int == 0o600)
        try await store.close()
    }

    @Test("an encrypted queue's snapshot is sealed: none of its text on disk, no key or another key refused")
    func sealed() async throws {
        let root = TemporaryRoot()
        let key = SymmetricKey(size: .bits256)
        var configuration = quietConfiguration()
        configuration.encryptionKey = key
        let store = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: configuration)
        let written = Self.snapshot(why: "behind its scope \"secret-scope-7731\"")
        try await store.publishSnapshot(written)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.directory.appending(LogOutboxStore.snapshotFileName).string))
        #expect(bytes.range(of: Data("secret-scope-7731".utf8)) == nil)
        #expect(bytes.range(of: Data("HTTP 503".utf8)) == nil)
        #expect(try await LogOutboxStore.snapshot(root: root.path, partition: "u", configuration: configuration) == written)

        var other = quietConfiguration()
        other.encryptionKey = SymmetricKey(size: .bits256)
        await #expect(throws: OutboxError.self) { _ = try await LogOutboxStore.snapshot(root: root.path, partition: "u", configuration: other) }
        try await store.close()
    }

    @Test("a file that is not a snapshot is refused with a typed error, whatever its bytes")
    func hostileFiles() async throws {
        let root = TemporaryRoot()
        let store = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: quietConfiguration())
        let path = store.directory.appending(LogOutboxStore.snapshotFileName).string
        var newer = Self.snapshot()
        newer.version = 2
        var negative = Self.snapshot()
        negative.counts["pending"] = -1
        var late = Self.snapshot()
        late.takenAt = Date(timeIntervalSince1970: 1e15)
        var tooMany = Self.snapshot()
        tooMany.waiting = Array(repeating: tooMany.waiting[0], count: OutboxQueueSnapshot.waitingKept + 1)
        let attempt = OutboxQueueSnapshot.Attempt(
            id: OutboxEntry.ID(), attempt: 1, startedAt: Self.start, endedAt: Self.start, outcome: .delivered)
        var tooManyAttempts = Self.snapshot()
        tooManyAttempts.attempts = Array(repeating: attempt, count: OutboxQueueSnapshot.attemptsKept + 1)
        var backwards = Self.snapshot()
        backwards.attempts = [attempt]
        backwards.attempts[0].endedAt = Self.start.addingTimeInterval(-1)
        var zeroth = Self.snapshot()
        zeroth.attempts = [attempt]
        zeroth.attempts[0].attempt = 0
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("unknown first byte", [7] + Self.snapshot().encoded()),
            ("not JSON", [0] + Array("{{{".utf8)),
            ("JSON of another shape", [0] + Array(#"{"version":1}"#.utf8)),
            ("another version", [0] + newer.encoded()),
            ("a count below zero", [0] + negative.encoded()),
            ("a time after the year 9999", [0] + late.encoded()),
            ("more waiting writes than kept", [0] + tooMany.encoded()),
            ("more attempts than kept", [0] + tooManyAttempts.encoded()),
            ("an attempt that ends before it starts", [0] + backwards.encoded()),
            ("an attempt numbered 0", [0] + zeroth.encoded()),
            ("larger than a snapshot", [0] + Array(repeating: UInt8(ascii: " "), count: OutboxQueueSnapshot.maximumEncodedSize + 64)),
            ("sealed without a key", [1] + Array(repeating: 9, count: 64)),
        ]
        for (name, bytes) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            await #expect(throws: OutboxError.self, "\(name)") { _ = try await LogOutboxStore.snapshot(root: root.path, partition: "u") }
        }
        // The queue itself is untouched by any of it.
        #expect(try await store.summary().total == 0)
        try await store.close()
    }

    @Test("the dispatcher writes a snapshot while it drains: counts, deliveries, a failure by cause, why the rest waits; stop says so")
    func dispatcherWrites() async throws {
        let root = TemporaryRoot()
        let store = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: quietConfiguration())
        let clock = ManualOutboxClock()
        let handler = ScriptedHandler()
        handler.script("busy", .transient(reason: "busy", httpStatus: 503, retryAfter: .seconds(60)))
        var configuration = OutboxDispatcherConfiguration()
        configuration.snapshotInterval = .seconds(1)
        configuration.randomSeed = 1
        let dispatcher = OutboxDispatcher(store: store, handlers: [Note.type: handler], configuration: configuration, clock: clock)
        await dispatcher.start()
        for text in ["one", "two", "busy"] { _ = try await dispatcher.enqueue(Note(text: text)) }

        // The ticker sleeps on the manual clock: each second it may write.
        // Until it shows the whole flush (the events reach it in any order).
        var written: OutboxQueueSnapshot?
        func complete(_ snapshot: OutboxQueueSnapshot?) -> Bool {
            guard let snapshot else { return false }
            return !snapshot.failures.isEmpty && snapshot.seconds.reduce(0) { $0 + $1.delivered } == 2
        }
        for _ in 0..<10_000 where !complete(written) {
            if clock.sleeperCount > 0 { clock.advance(by: .seconds(1)) }
            await Task.yield()
            written = try await LogOutboxStore.snapshot(root: root.path, partition: "u")
        }
        let snapshot = try #require(written)
        #expect(snapshot.dispatcher == .running)
        #expect(snapshot.processID == ProcessInfo.processInfo.processIdentifier)
        #expect(snapshot.count(.waitingToRetry) == 1)
        #expect(snapshot.count(.pending) == 0)
        #expect(snapshot.seconds.reduce(0) { $0 + $1.delivered } == 2)
        #expect(snapshot.failures.map(\.cause) == ["unavailable, HTTP 503"])
        #expect(snapshot.waiting.map(\.reason) == ["retryAt"])

        await dispatcher.stop()
        #expect(try await LogOutboxStore.snapshot(root: root.path, partition: "u")?.dispatcher == .stopped)
        try await store.close()
    }
}
