import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import Testing

/// The idempotency key is derived from (partition, entry id) unless the app
/// supplies one: an app that enqueues the same write again — after an
/// error, a crash or a power loss — gets `duplicate` or the same key, never
/// a second write.
@Suite("Idempotency keys")
struct IdempotencyKeyTests {
    static func key(partition: String, id: OutboxEntry.ID) async throws -> String {
        let store = InMemoryOutboxStore(partition: partition, configuration: quietConfiguration())
        guard case .enqueued(let entry) = try await store.enqueue(request(id)) else { throw CancellationError() }
        return entry.idempotencyKey
    }

    @Test("the default key is a function of the partition and the entry id, and reveals neither")
    func derivedKeys() async throws {
        let id = OutboxEntry.ID()
        let key = try await Self.key(partition: "alice", id: id)
        #expect(try await Self.key(partition: "alice", id: id) == key)
        #expect(try await Self.key(partition: "bob", id: id) != key)
        #expect(try await Self.key(partition: "alice", id: OutboxEntry.ID()) != key)
        // UUID-shaped, as servers expect; neither the id nor the user in it.
        #expect(UUID(uuidString: key) != nil)
        #expect(!key.contains(id.description) && key != id.description)
        #expect(!key.lowercased().contains("alice"))
    }

    /// Runs `enqueue` with the next sync of the log's one segment failing,
    /// and expects it to fail with that sync. The rule names that file: the
    /// segment exists (an entry was added), so its next sync is the
    /// enqueue's, and nothing else syncs it meanwhile — the background
    /// checkpoints sync files of their own (`INDEX.tmp`, the store's
    /// checkpoint), and a segment's header is synced under its temporary
    /// name. The injected fault is checked too, so a rule that hit another
    /// file says which.
    func failNextSyncOfTheSegment<T>(
        _ disk: SimulatedFileSystem, _ enqueue: () async throws -> T,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let segments = disk.allFiles().filter { $0.string.hasSuffix(".seg") }
        let segment = try #require(segments.first, "no segment after an add", sourceLocation: sourceLocation)
        #expect(segments.count == 1, "\(segments)", sourceLocation: sourceLocation)
        let rule = disk.faults.install(.nthCall(1, of: .synchronize, paths: .exactly(segment)))
        await expectOutboxError(.storage, sourceLocation: sourceLocation) { try await enqueue() }
        #expect(disk.faults.failureCount(of: rule) == 1, "the enqueue never synced its segment", sourceLocation: sourceLocation)
        #expect(disk.faults.injectedFaults.map(\.paths) == [[segment]], sourceLocation: sourceLocation)
        disk.faults.removeAllRules()
    }

    /// A store on a simulated disk, still open, holding one earlier entry,
    /// whose enqueue of `id` ("pay 10") just failed with the sync of its
    /// segment (``failNextSyncOfTheSegment(_:_:sourceLocation:)``).
    func storeAfterAFailedEnqueue(
        of id: OutboxEntry.ID, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (SimulatedFileSystem, OutboxStoreConfiguration, LogOutboxStore) {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let configuration = quietConfiguration(on: disk)
        let store = try await LogOutboxStore.open(root: "/data/outbox", partition: "p", configuration: configuration)
        try await store.add(request(payload: "earlier"))
        try await failNextSyncOfTheSegment(
            disk, { try await store.enqueue(request(id, payload: "pay 10")) }, sourceLocation: sourceLocation)
        return (disk, configuration, store)
    }

    @Test("a write enqueued again after its enqueue failed and the machine lost power gets the key it had")
    func retryAfterAFailedEnqueueAndAPowerLoss() async throws {
        let id = OutboxEntry.ID()
        let (disk, configuration, store) = try await storeAfterAFailedEnqueue(of: id)
        disk.simulatePowerLoss(.dropUnsynced, seed: 1)
        withExtendedLifetime(store) {}

        let reopened = try await LogOutboxStore.open(root: "/data/outbox", partition: "p", configuration: configuration)
        #expect(try await reopened.entry(id) == nil)  // the failed enqueue is gone
        let entry = try #require(try await reopened.enqueue(request(id, payload: "pay 10")).newEntry, "expected a new entry")
        // Had the first attempt reached the server, this one would be answered from it.
        #expect(entry.idempotencyKey == (try await Self.key(partition: "p", id: id)))
        try await reopened.close()
    }

    @Test("a write enqueued again after its enqueue failed and the app was killed is a duplicate")
    func retryAfterAFailedEnqueueAndAnAppKill() async throws {
        let id = OutboxEntry.ID()
        let (disk, configuration, store) = try await storeAfterAFailedEnqueue(of: id)
        // Killed: the kernel still has the written record, and the next open keeps it.
        disk.simulateProcessCrash()
        withExtendedLifetime(store) {}

        let reopened = try await LogOutboxStore.open(root: "/data/outbox", partition: "p", configuration: configuration)
        let again = try await reopened.enqueue(request(id, payload: "pay 10"))
        #expect(again == .duplicate(id, status: .pending))
        #expect(try await reopened.summary().total == 2)
        #expect(try await reopened.entry(id)?.idempotencyKey == (try await Self.key(partition: "p", id: id)))
        try await reopened.close()
    }

    @Test("the same id enqueued again after its completion was pruned is sent with the same key")
    func sameKeyAfterThePruneWindow() async throws {
        var subject = try await StoreUnderTest.make(.log) { $0.mappingRetention = .seconds(60) }
        let now = Date()
        let id = OutboxEntry.ID()
        guard case .enqueued(let first) = try await subject.store.enqueue(request(id)) else { throw CancellationError() }
        try await subject.store.deliver(id, serverID: "srv-1", at: now)
        try await subject.store.prune(at: now.addingTimeInterval(3600))
        try await subject.reopen(now: now)
        #expect(try await subject.store.completion(of: id) == nil)
        let second = try #require(
            try await subject.store.enqueue(request(id)).newEntry, "expected a new entry once the completion was pruned")
        #expect(second.idempotencyKey == first.idempotencyKey)
        try await subject.close()
    }

    @Test("an app-supplied key is sent as is; enqueueing it again under a new id is a duplicate of the first entry", arguments: StoreKind.allCases)
    func appSuppliedKey(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        var first = request(payload: "submit form 77")
        first.idempotencyKey = "form-77-submit"
        guard case .enqueued(let entry) = try await subject.store.enqueue(first) else { throw CancellationError() }
        #expect(entry.idempotencyKey == "form-77-submit")

        // The app crashed before it kept the id, and enqueues the write again.
        var again = request(payload: "submit form 77")
        again.idempotencyKey = "form-77-submit"
        #expect(try await subject.store.enqueue(again) == .duplicate(first.id, status: .pending))
        try await subject.reopen(now: now)
        #expect(try await subject.store.enqueue(again) == .duplicate(first.id, status: .pending))
        #expect(try await subject.store.summary().total == 1)
        #expect(try await subject.store.entry(first.id)?.idempotencyKey == "form-77-submit")

        // Delivered: still a duplicate while its completion is kept…
        try await subject.store.deliver(first.id, serverID: "form-77", at: now)
        try await subject.reopen(now: now)
        #expect(try await subject.store.enqueue(again) == .duplicate(first.id, status: .succeeded))
        // …and a new entry (with the same key, which the server remembers) after.
        try await subject.store.prune(at: now.addingTimeInterval(8 * 24 * 3600))
        try await subject.reopen(now: now)
        let later = try #require(
            try await subject.store.enqueue(again).newEntry, "expected a new entry once the completion was pruned")
        #expect(later.idempotencyKey == "form-77-submit")
        try await subject.close()
    }

    @Test("a quarantined entry keeps its key; a discarded or coalesced-away one gives it up", arguments: StoreKind.allCases)
    func keyLifetime(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        var dead = request(payload: "dead")
        dead.idempotencyKey = "k-dead"
        try await subject.store.add(dead)
        _ = try await subject.store.quarantine(dead.id, OutboxFailure(.permanent, message: "by hand"))
        var retried = request(payload: "dead")
        retried.idempotencyKey = "k-dead"
        try await subject.reopen()
        #expect(try await subject.store.enqueue(retried) == .duplicate(dead.id, status: .quarantined))
        _ = try await subject.store.discard(dead.id)
        try await subject.reopen()
        guard case .enqueued = try await subject.store.enqueue(retried) else {
            Issue.record("a discarded entry's key still held")
            return
        }

        var liked = request(payload: "like", coalescingKey: "like:1")
        liked.idempotencyKey = "k-like"
        try await subject.store.add(liked)
        var unliked = request(payload: "unlike", coalescingKey: "like:1")
        unliked.idempotencyKey = "k-unlike"
        guard case .coalesced = try await subject.store.enqueue(unliked) else { throw CancellationError() }
        try await subject.reopen()
        var likedAgain = request(payload: "like", coalescingKey: "like:2")
        likedAgain.idempotencyKey = "k-like"
        guard case .enqueued = try await subject.store.enqueue(likedAgain) else {
            Issue.record("a coalesced-away entry's key still held")
            return
        }
        #expect(try await subject.store.enqueue(unliked) == .duplicate(unliked.id, status: .pending))
        try await subject.close()
    }

    @Test("the key an app passes reaches the handler unchanged, on every attempt")
    func appKeyOnTheWire() async throws {
        let fixture = DispatcherFixture()
        let id = OutboxEntry.ID()
        fixture.handler.script("hello", .transient(reason: "503", httpStatus: 503, retryAfter: .zero), .delivered(serverID: "n1"))
        _ = try await fixture.dispatcher.enqueue(Note(text: "hello"), id: id, idempotencyKey: "note-hello-1")
        await fixture.dispatcher.flush()
        // Retry-After: 0 is clamped to the dispatcher's floor (1 s).
        fixture.clock.advance(by: .seconds(1))
        await fixture.dispatcher.flush()
        await fixture.events.wait { events in events.contains { $0.deliveredID == id } }
        #expect(fixture.handler.deliveries(of: id).map(\.idempotencyKey) == ["note-hello-1", "note-hello-1"])
    }
}
