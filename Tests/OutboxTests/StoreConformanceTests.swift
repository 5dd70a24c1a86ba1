import Foundation
import Outbox
import Testing

/// One suite, every store: `InMemoryOutboxStore` and `LogOutboxStore` must
/// be indistinguishable through the `OutboxStore` interface. Log stores are
/// reopened between steps, so every assertion also checks persistence.
@Suite("Store conformance")
struct StoreConformanceTests {
    @Test("enqueue mints an idempotency key once; the same id twice is one entry", arguments: StoreKind.allCases)
    func enqueueIsIdempotent(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let id = OutboxEntry.ID()
        let entry = try #require(
            try await subject.store.enqueue(request(id, payload: #"{"a":1}"#)).newEntry, "expected a new entry")
        #expect(entry.status == .pending)
        #expect(entry.attempts == 0)
        #expect(entry.partition == "alice")
        #expect(UUID(uuidString: entry.idempotencyKey) != nil)
        #expect(entry.payload == Array(#"{"a":1}"#.utf8))

        try await subject.reopen()
        let again = try await subject.store.enqueue(request(id, payload: #"{"a":2}"#))
        #expect(again == .duplicate(id, status: .pending))
        let stored = try #require(try await subject.store.entry(id))
        #expect(stored.idempotencyKey == entry.idempotencyKey)
        #expect(stored.payload == Array(#"{"a":1}"#.utf8))
        #expect(try await subject.store.summary().total == 1)

        // Even after delivery, the id is remembered: no second send.
        try await subject.store.deliver(id, serverID: "srv-1")
        try await subject.reopen()
        #expect(try await subject.store.enqueue(request(id)) == .duplicate(id, status: .succeeded))
        #expect(try await subject.store.summary().total == 0)
        try await subject.close()
    }

    @Test("due entries come by priority, then sequence", arguments: StoreKind.allCases)
    func dueOrder(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let low = try await subject.store.add(request(priority: -1))
        let first = try await subject.store.add(request())
        let urgent = try await subject.store.add(request(priority: 5))
        let second = try await subject.store.add(request())
        try await subject.reopen()
        #expect(try await subject.store.dueIDs() == [urgent, first, second, low])
        #expect(try await subject.store.dueIDs(limit: 2) == [urgent, first])
        let sequences = try await subject.store.entries(matching: .all).map(\.sequence)
        #expect(sequences == sequences.sorted() && Set(sequences).count == 4)
        try await subject.close()
    }

    @Test("a scope sends one entry at a time, in order; a failure holds it, a quarantined entry does not", arguments: StoreKind.allCases)
    func scopes(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let a1 = try await subject.store.add(request(scope: "conversation-a"))
        let a2 = try await subject.store.add(request(scope: "conversation-a"))
        let a3 = try await subject.store.add(request(scope: "conversation-a"))
        let b1 = try await subject.store.add(request(scope: "conversation-b"))
        #expect(try await subject.store.dueIDs(at: now) == [a1, b1])

        // In flight: nothing else of the scope is due.
        _ = try await subject.store.beginAttempt(a1, at: now, lease: .seconds(30))
        #expect(try await subject.store.dueIDs(at: now) == [b1])
        await expectOutboxError(.invalidTransition) { try await subject.store.beginAttempt(a2, at: now, lease: .seconds(30)) }

        // A transient failure holds the scope until its retry time.
        let retryAt = now.addingTimeInterval(60)
        _ = try await subject.store.recordFailure(a1, OutboxFailure(.transient, message: "timeout"), retryAt: retryAt)
        try await subject.reopen(now: now)
        #expect(try await subject.store.dueIDs(at: now) == [b1])
        #expect(try await subject.store.nextDueDate().map { abs($0.timeIntervalSince(retryAt)) < 0.01 } == true)
        #expect(try await subject.store.dueIDs(at: retryAt) == [a1, b1])

        // A quarantined entry leaves the scope: the next one goes.
        _ = try await subject.store.beginAttempt(a1, at: retryAt, lease: .seconds(30))
        _ = try await subject.store.quarantine(a1, OutboxFailure(.permanent, httpStatus: 422, message: "422 invalid"))
        #expect(try await subject.store.dueIDs(at: retryAt) == [a2, b1])
        try await subject.store.deliver(a2, at: retryAt)
        try await subject.reopen(now: retryAt)
        #expect(try await subject.store.dueIDs(at: retryAt) == [a3, b1])
        try await subject.close()
    }

    @Test("dependencies wait for their parent; a quarantined parent quarantines them; a retried one revives them", arguments: StoreKind.allCases)
    func dependencies(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let album = try await subject.store.add(request(type: "create_album", endpoint: "/albums"))
        let photo = try await subject.store.add(
            request(type: "add_photo", endpoint: "/albums/\(album.localReference)/photos", dependencies: [album]))
        let caption = try await subject.store.add(request(type: "caption", dependencies: [photo]))
        #expect(try await subject.store.dueIDs(at: now) == [album])
        #expect(try await subject.store.dependents(of: album) == [photo])

        _ = try await subject.store.beginAttempt(album, at: now, lease: .seconds(30))
        let cascade = try await subject.store.quarantine(album, OutboxFailure(.permanent, httpStatus: 403, message: "403 forbidden"))
        #expect(Set(cascade.dependents) == [photo, caption])
        try await subject.reopen(now: now)
        #expect(try await subject.store.status(photo) == .quarantined)
        #expect(try await subject.store.entry(caption)?.lastFailure?.cause == .dependency(.quarantined(photo)))
        #expect(try await subject.store.dueIDs(at: now).isEmpty)

        let revived = try await subject.store.retry(album, at: now)
        #expect(Set(revived.dependents) == [photo, caption])
        #expect(try await subject.store.entry(album)?.attempts == 0)
        #expect(try await subject.store.dueIDs(at: now) == [album])

        try await subject.store.deliver(album, serverID: "album-77", at: now)
        try await subject.reopen(now: now)
        #expect(try await subject.store.completion(of: album)?.serverID == "album-77")
        #expect(try await subject.store.dueIDs(at: now) == [photo])
        try await subject.close()
    }

    @Test("invalid transitions are typed errors and change nothing", arguments: StoreKind.allCases)
    func invalidTransitions(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let id = try await subject.store.add(request())
        await expectOutboxError(.invalidTransition) { try await subject.store.recordSuccess(id, serverID: nil, at: now) }
        await expectOutboxError(.invalidTransition) {
            try await subject.store.recordFailure(id, OutboxFailure(.transient, message: "x"), retryAt: now)
        }
        await expectOutboxError(.invalidTransition) { try await subject.store.markConflict(id, OutboxFailure(.conflict, httpStatus: 409, message: "x")) }
        await expectOutboxError(.invalidTransition) { try await subject.store.retry(id, at: now) }
        await expectOutboxError(.notFound) { try await subject.store.beginAttempt(OutboxEntry.ID(), at: now, lease: .seconds(1)) }
        _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
        await expectOutboxError(.invalidTransition) { try await subject.store.beginAttempt(id, at: now, lease: .seconds(30)) }
        await expectOutboxError(.invalidTransition) { try await subject.store.discard(id) }
        try await subject.reopen(now: now)
        // A crash left it in flight: it comes back pending, the attempt counted.
        let entry = try #require(try await subject.store.entry(id))
        #expect(entry.status == (kind == .log ? .pending : .inFlight))
        #expect(entry.attempts == 1)
        try await subject.close()
    }

    @Test("transient failures back off, and give up after maxAttempts", arguments: StoreKind.allCases)
    func failuresAndMaxAttempts(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        var now = Date()
        let id = try await subject.store.add(request(maxAttempts: 3))
        let child = try await subject.store.add(request(dependencies: [id]))
        for attempt in 1...3 {
            #expect(try await subject.store.dueIDs(at: now) == [id], "attempt \(attempt)")
            _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
            let outcome = try await subject.store.recordFailure(
                id, OutboxFailure(.transient, httpStatus: 503, message: "503 unavailable"), retryAt: now.addingTimeInterval(10))
            #expect(outcome.status == (attempt < 3 ? .waitingToRetry : .quarantined))
            if attempt == 3 { #expect(outcome.cascade.dependents == [child]) }
            #expect(try await subject.store.dueIDs(at: now).isEmpty)
            now = now.addingTimeInterval(10)
            try await subject.reopen(now: now)
        }
        let dead = try #require(try await subject.store.entry(id))
        #expect(dead.status == .quarantined)
        #expect(dead.attempts == 3)
        #expect(dead.lastFailure?.httpStatus == 503)
        #expect(dead.lastFailure?.cause == .attemptsUsedUp)
        #expect(try await subject.store.status(child) == .quarantined)
        try await subject.close()
    }

    @Test("conflicts wait for a decision; discard removes and quarantines dependents", arguments: StoreKind.allCases)
    func conflictAndDiscard(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let id = try await subject.store.add(request(scope: "doc-1"))
        let next = try await subject.store.add(request(scope: "doc-1"))
        let child = try await subject.store.add(request(dependencies: [id]))
        _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
        try await subject.store.markConflict(id, OutboxFailure(.conflict, httpStatus: 409, message: "409 version mismatch"))
        try await subject.reopen(now: now)
        #expect(try await subject.store.status(id) == .conflict)
        // The conflict leaves its scope; the dependent waits for the decision.
        #expect(try await subject.store.dueIDs(at: now) == [next])
        let cascade = try await subject.store.discard(id)
        #expect(cascade.dependents == [child])
        try await subject.reopen(now: now)
        #expect(try await subject.store.entry(id) == nil)
        #expect(try await subject.store.status(child) == .quarantined)
        #expect(try await subject.store.completion(of: id) == nil)
        try await subject.close()
    }

    @Test("coalescing replaces a pending entry with the same key, keeping its place, but never one in flight", arguments: StoreKind.allCases)
    func coalescing(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let first = try await subject.store.add(request(payload: "like", scope: "post-9", coalescingKey: "like:post-9"))
        let comment = try await subject.store.add(request(payload: "comment", scope: "post-9"))
        let result = try await subject.store.enqueue(request(payload: "unlike", scope: "post-9", coalescingKey: "like:post-9"))
        let (replacement, replaced) = try #require(result.replacement, "expected coalescing, got \(result)")
        #expect(replaced == first)
        try await subject.reopen(now: now)
        #expect(try await subject.store.entry(first) == nil)
        #expect(try await subject.store.entry(replacement.id)?.payload == Array("unlike".utf8))
        #expect(try await subject.store.dueIDs(at: now) == [replacement.id])  // still before the comment
        #expect(try await subject.store.summary().total == 2)

        // Once in flight, a new value is a new entry after it.
        _ = try await subject.store.beginAttempt(replacement.id, at: now, lease: .seconds(30))
        let later = try await subject.store.enqueue(request(payload: "like", scope: "post-9", coalescingKey: "like:post-9"))
        let fresh = try #require(later.newEntry, "expected a new entry, got \(later)")
        try await subject.store.recordSuccess(replacement.id, serverID: nil, at: now)
        try await subject.store.deliverOneAtATime([comment], at: now)
        #expect(try await subject.store.dueIDs(at: now) == [fresh.id])
        try await subject.close()
    }

    @Test("an entry that was ever attempted is never coalesced away, not even after a crash left it pending")
    func noCoalescingAfterAnAttempt() async throws {
        var subject = try await StoreUnderTest.make(.log)
        let now = Date()
        let sent = try await subject.store.add(request(payload: "like", coalescingKey: "like:7"))
        _ = try await subject.store.beginAttempt(sent, at: now, lease: .seconds(30))
        try await subject.reopen(now: now)  // the crash: in flight → pending, attempt counted
        #expect(try await subject.store.entry(sent)?.status == .pending)
        let result = try await subject.store.enqueue(request(payload: "unlike", coalescingKey: "like:7"))
        let fresh = try #require(
            result.newEntry, "the attempted entry may have reached the server: expected a new entry, got \(result)")
        #expect(try await subject.store.dueIDs(at: now) == [sent, fresh.id])
        // The newest value now holds the key.
        let third = try await subject.store.enqueue(request(payload: "like", coalescingKey: "like:7"))
        guard case .coalesced(_, let replaced) = third else {
            Issue.record("expected the fresh entry to be coalesced, got \(third)")
            return
        }
        #expect(replaced == fresh.id)
        try await subject.close()
    }

    @Test("an entry whose status ever changed keeps its key out of coalescing, across reopens too", arguments: StoreKind.allCases)
    func noCoalescingAfterRevival(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let held = try await subject.store.add(request(payload: "v1", coalescingKey: "k"))
        _ = try await subject.store.quarantine(held, OutboxFailure(.permanent, message: "by hand"))
        _ = try await subject.store.retry(held, at: now)
        try await subject.reopen(now: now)
        let result = try await subject.store.enqueue(request(payload: "v2", coalescingKey: "k"))
        guard case .enqueued = result else {
            Issue.record("a revived entry was replaced: \(result)")
            return
        }
        #expect(try await subject.store.summary().total == 2)
        try await subject.close()
    }

    /// Found by the lockstep model test (a rare random case): reloading made
    /// the oldest never-changed entry with a key its holder again, though a
    /// newer entry with that key had taken the key over before the restart.
    /// Replacing that old entry puts the newest value in the old one's
    /// place, ahead of the newer one: the newer, stale value would reach the
    /// server last.
    @Test("a key taken over by a newer entry stays taken across a reopen", arguments: StoreKind.allCases)
    func coalescingHolderSurvivesReopen(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let like = try await subject.store.add(request(payload: "like", scope: "post-9", coalescingKey: "like:post-9"))
        let comment = try await subject.store.add(request(payload: "comment", scope: "post-9", dependencies: [like]))
        // The comment depends on the like, so the unlike cannot replace it: it
        // queues behind, and holds the key.
        let unlike = try await subject.store.enqueue(request(payload: "unlike", scope: "post-9", coalescingKey: "like:post-9"))
        let unliked = try #require(unlike.newEntry, "expected a new entry, got \(unlike)")
        _ = try await subject.store.quarantine(unliked.id, OutboxFailure(.permanent, message: "by hand"))
        _ = try await subject.store.retry(unliked.id, at: now)  // pending again, but changed: it gave the key up
        _ = try await subject.store.discard(comment)
        try await subject.reopen(now: now)
        let again = try await subject.store.enqueue(request(payload: "like again", scope: "post-9", coalescingKey: "like:post-9"))
        let likedAgain = try #require(
            again.newEntry, "the first like was replaced, so the new value would be sent before the unlike: \(again)")
        try await subject.store.deliverOneAtATime([like, unliked.id], at: now)
        #expect(try await subject.store.dueIDs(at: now) == [likedAgain.id])
        try await subject.close()
    }

    @Test("a replacement that moves to another scope queues behind that scope's entries", arguments: StoreKind.allCases)
    func coalescingAcrossScopes(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let old = try await subject.store.add(request(payload: "v1", scope: "a", coalescingKey: "k"))
        let b1 = try await subject.store.add(request(payload: "b1", scope: "b"))
        let result = try await subject.store.enqueue(request(payload: "v2", scope: "b", coalescingKey: "k"))
        guard case .coalesced(let replacement, old) = result else {
            Issue.record("expected coalescing, got \(result)")
            return
        }
        let entries = try await subject.store.entries(matching: .all)
        #expect(entries.map(\.id) == [b1, replacement.id])
        #expect(try await subject.store.dueIDs(at: now) == [b1])
        try await subject.close()
    }

    @Test("a new entry whose parent is already quarantined is quarantined at once, and revived with it", arguments: StoreKind.allCases)
    func childOfDeadParent(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let parent = try await subject.store.add(request(payload: "album"))
        _ = try await subject.store.beginAttempt(parent, at: now, lease: .seconds(30))
        _ = try await subject.store.quarantine(parent, OutboxFailure(.permanent, httpStatus: 422, message: "422"))
        let result = try await subject.store.enqueue(request(payload: "photo", dependencies: [parent]))
        let child = try #require(result.newEntry, "expected the child to be recorded, got \(result)")
        #expect(child.status == .quarantined)
        #expect(child.lastFailure?.cause == .dependency(.quarantined(parent)))
        try await subject.reopen(now: now)
        #expect(try await subject.store.status(child.id) == .quarantined)
        #expect(try await subject.store.summary().unsent == 0)  // nothing waits forever
        #expect(try await subject.store.retry(parent, at: now).dependents == [child.id])
        #expect(try await subject.store.status(child.id) == .pending)
        try await subject.close()
    }

    @Test(
        "an entry with two quarantined parents comes back only once neither is quarantined: retrying one names the other as its reason",
        arguments: StoreKind.allCases)
    func twoDeadParents(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let first = try await subject.store.add(request(payload: "album"))
        let second = try await subject.store.add(request(payload: "tag"))
        let child = try await subject.store.add(request(payload: "photo", dependencies: [first, second]))
        for parent in [first, second] {
            _ = try await subject.store.beginAttempt(parent, at: now, lease: .seconds(30))
            _ = try await subject.store.quarantine(parent, OutboxFailure(.permanent, httpStatus: 422, message: "422"))
        }
        #expect(try await subject.store.entry(child)?.lastFailure?.dependency?.parent == first)

        // Its reason named the first; the second is still quarantined: brought
        // back now it would wait, pending, for a parent that cannot succeed.
        #expect(try await subject.store.retry(first, at: now).dependents.isEmpty)
        #expect(try await subject.store.status(child) == .quarantined)
        #expect(try await subject.store.entry(child)?.lastFailure?.dependency?.parent == second)
        try await subject.reopen(now: now)
        #expect(try await subject.store.status(child) == .quarantined)
        #expect(try await subject.store.entry(child)?.lastFailure?.dependency?.parent == second)
        #expect(try await subject.store.summary().unsent == 1)  // the first, retried; nothing waits forever

        #expect(try await subject.store.retry(second, at: now).dependents == [child])
        #expect(try await subject.store.status(child) == .pending)
        try await subject.close()
    }

    @Test("capacity limits refuse new entries; the eviction policy drops the oldest quarantined ones, never pending ones", arguments: StoreKind.allCases)
    func capacity(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind) { $0.maximumEntries = 3 }
        let now = Date()
        let one = try await subject.store.add(request())
        try await subject.store.add(request())
        try await subject.store.add(request())
        await expectOutboxError(.full) { try await subject.store.add(request()) }
        #expect(try await subject.store.summary().total == 3)
        _ = try await subject.store.beginAttempt(one, at: now, lease: .seconds(1))
        _ = try await subject.store.quarantine(one, OutboxFailure(.permanent, httpStatus: 400, message: "bad"))
        await expectOutboxError(.full) { try await subject.store.add(request()) }
        try await subject.close()

        var evicting = try await StoreUnderTest.make(kind) {
            $0.maximumEntries = 3
            $0.fullPolicy = .evictOldestQuarantined
        }
        let dead = try await evicting.store.add(request())
        let pending1 = try await evicting.store.add(request())
        let pending2 = try await evicting.store.add(request())
        _ = try await evicting.store.quarantine(dead, OutboxFailure(.permanent, httpStatus: 400, message: "bad"))
        let newcomer = try await evicting.store.add(request())
        try await evicting.reopen(now: now)
        #expect(try await evicting.store.entry(dead) == nil)
        #expect(Set(try await evicting.store.entries(matching: .all).map(\.id)) == [pending1, pending2, newcomer])
        await expectOutboxError(.full) { try await evicting.store.add(request()) }
        try await evicting.close()

        let bytes = try await StoreUnderTest.make(kind) { $0.maximumBytes = 2000 }
        try await bytes.store.add(request(payload: String(repeating: "x", count: 900)))
        await expectOutboxError(.full) { try await bytes.store.add(request(payload: String(repeating: "y", count: 1500))) }
        try await bytes.store.add(request(payload: "small"))
        try await bytes.close()
    }

    @Test("summary counts and sizes entries by status", arguments: StoreKind.allCases)
    func summary(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let ids = [
            try await subject.store.add(request(payload: String(repeating: "a", count: 100))),
            try await subject.store.add(request(payload: String(repeating: "b", count: 200))),
            try await subject.store.add(request()),
        ]
        _ = try await subject.store.beginAttempt(ids[0], at: now, lease: .seconds(30))
        _ = try await subject.store.recordFailure(ids[0], OutboxFailure(.transient, message: "x"), retryAt: now)
        _ = try await subject.store.quarantine(ids[2], OutboxFailure(.permanent, message: "y"))
        try await subject.reopen(now: now)
        let summary = try await subject.store.summary()
        #expect(summary.count(.pending) == 1)
        #expect(summary.count(.waitingToRetry) == 1)
        #expect(summary.count(.quarantined) == 1)
        #expect(summary.unsent == 2)
        #expect(summary.needsAttention == 1)
        #expect((summary.bytes[.pending] ?? 0) > (summary.bytes[.quarantined] ?? 0) + 100)
        try await subject.close()
    }

    @Test("list filters by status, type and scope, in sequence order", arguments: StoreKind.allCases)
    func listing(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let a = try await subject.store.add(request(type: "message", scope: "chat-1"))
        let b = try await subject.store.add(request(type: "like"))
        let c = try await subject.store.add(request(type: "message", scope: "chat-2"))
        _ = try await subject.store.quarantine(b, OutboxFailure(.permanent, message: "no"))
        try await subject.reopen()
        #expect(try await subject.store.entries(matching: .all).map(\.id) == [a, b, c])
        #expect(try await subject.store.entries(matching: OutboxFilter(type: "message")).map(\.id) == [a, c])
        #expect(try await subject.store.entries(matching: OutboxFilter(scope: "chat-2")).map(\.id) == [c])
        #expect(try await subject.store.entries(matching: OutboxFilter(statuses: [.quarantined])).map(\.id) == [b])
        #expect(try await subject.store.entries(matching: OutboxFilter(limit: 2)).map(\.id) == [a, b])
        #expect(try await subject.store.entries(matching: OutboxFilter(type: "nothing")).isEmpty)
        try await subject.close()
    }

    @Test("bad requests are rejected before anything is written", arguments: StoreKind.allCases)
    func badRequests(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        await expectOutboxError(.unknownDependency) { try await subject.store.add(request(dependencies: [OutboxEntry.ID()])) }
        var secret = request()
        secret.headers["Authorization"] = "Bearer abc"
        await expectOutboxError(.invalidArgument) { try await subject.store.add(secret) }
        await expectOutboxError(.invalidArgument) { try await subject.store.add(request(endpoint: "posts")) }
        await expectOutboxError(.invalidArgument) { try await subject.store.add(request(maxAttempts: 0)) }
        #expect(try await subject.store.summary().total == 0)
        try await subject.close()
    }

    @Test("succeeded entries are kept for the audit window, then pruned; clear empties the partition", arguments: StoreKind.allCases)
    func retentionAndClear(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind) { $0.succeededRetention = .seconds(3600) }
        let now = Date()
        let id = try await subject.store.add(request())
        let other = try await subject.store.add(request())
        try await subject.store.deliver(id, serverID: "s-1", at: now)
        try await subject.reopen(now: now)
        let kept = try #require(try await subject.store.entry(id))
        #expect(kept.status == .succeeded)
        #expect(kept.serverID == "s-1")
        #expect(kept.syncedAt != nil)
        try await subject.store.prune(at: now.addingTimeInterval(60))
        #expect(try await subject.store.entry(id) != nil)
        try await subject.store.prune(at: now.addingTimeInterval(7200))
        try await subject.reopen(now: now)
        #expect(try await subject.store.entry(id) == nil)
        #expect(try await subject.store.completion(of: id)?.serverID == "s-1")
        try await subject.store.clear()
        try await subject.reopen(now: now)
        #expect(try await subject.store.entry(other) == nil)
        #expect(try await subject.store.summary().total == 0)
        #expect(try await subject.store.completion(of: id) == nil)
        try await subject.close()
    }
}
