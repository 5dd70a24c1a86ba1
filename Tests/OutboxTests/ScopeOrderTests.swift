import Foundation
import Outbox
import Testing

/// Two ways a scope's order could break: a coalesced entry placed ahead of its own dependency (a
/// scope deadlocked for good), and a retried entry placed ahead of a head
/// already being sent (two entries of one scope in flight).
@Suite("Scope order")
struct ScopeOrderTests {
    @Test("a coalesced entry never takes a place ahead of its own dependency: the scope drains", arguments: StoreKind.allCases)
    func coalescedBehindItsDependency(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let old = try await subject.store.add(request(payload: "like", scope: "s", coalescingKey: "k"))
        let parent = try await subject.store.add(request(payload: "post", scope: "s"))
        let result = try await subject.store.enqueue(
            request(payload: "unlike", scope: "s", dependencies: [parent], coalescingKey: "k"))
        let (replacement, replaced) = try #require(result.replacement, "expected coalescing, got \(result)")
        #expect(replaced == old)
        try await subject.reopen(now: now)
        // Keeping `old`'s place would put it ahead of `parent`, which could
        // then never become the head: it goes behind it instead.
        #expect(try await subject.store.dueIDs(at: now) == [parent])
        #expect(try await subject.store.entries(matching: OutboxFilter(scope: "s")).map(\.id) == [parent, replacement.id])
        try await subject.store.deliver(parent, serverID: "p-1", at: now)
        try await subject.reopen(now: now)
        try await subject.store.deliverOneAtATime([replacement.id], at: now)
        #expect(try await subject.store.summary().unsent == 0)
        try await subject.close()
    }

    @Test("nor ahead of a dependency's own ancestors in its scope (a dependency outside the scope)", arguments: StoreKind.allCases)
    func coalescedBehindATransitiveDependency(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        _ = try await subject.store.add(request(payload: "v1", scope: "s", coalescingKey: "k"))
        let parent = try await subject.store.add(request(payload: "p", scope: "s"))
        let middle = try await subject.store.add(request(payload: "m", dependencies: [parent]))  // no scope
        let result = try await subject.store.enqueue(
            request(payload: "v2", scope: "s", dependencies: [middle], coalescingKey: "k"))
        let replacement = try #require(result.replacement, "expected coalescing, got \(result)").entry
        try await subject.reopen(now: now)
        try await subject.store.deliverOneAtATime([parent, middle], at: now)
        try await subject.reopen(now: now)
        #expect(try await subject.store.dueIDs(at: now) == [replacement.id])
        try await subject.close()
    }

    @Test("a coalesced entry whose dependencies are older still keeps the replaced entry's place", arguments: StoreKind.allCases)
    func coalescedKeepsPlaceWhenItCan(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let parent = try await subject.store.add(request(payload: "album"))
        _ = try await subject.store.add(request(payload: "v1", scope: "s", coalescingKey: "k"))
        let later = try await subject.store.add(request(payload: "later", scope: "s"))
        let result = try await subject.store.enqueue(
            request(payload: "v2", scope: "s", dependencies: [parent], coalescingKey: "k"))
        let replacement = try #require(result.replacement, "expected coalescing, got \(result)").entry
        try await subject.reopen(now: now)
        #expect(try await subject.store.entries(matching: OutboxFilter(scope: "s")).map(\.id) == [replacement.id, later])
        try await subject.store.deliverOneAtATime([parent], at: now)
        #expect(try await subject.store.dueIDs(at: now) == [replacement.id])
        try await subject.close()
    }

    @Test("a retried entry never goes ahead of a head that is in flight: one entry of a scope in flight at a time", arguments: StoreKind.allCases)
    func retryBehindAnInFlightHead(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let first = try await subject.store.add(request(payload: "first", scope: "s"))
        let second = try await subject.store.add(request(payload: "second", scope: "s"))
        _ = try await subject.store.quarantine(first, OutboxFailure(.permanent, message: "by hand"))
        _ = try await subject.store.beginAttempt(second, at: now, lease: .seconds(30))
        _ = try await subject.store.retry(first, at: now)
        #expect(try await subject.store.dueIDs(at: now).isEmpty)
        await expectOutboxError(.invalidTransition) { try await subject.store.beginAttempt(first, at: now, lease: .seconds(30)) }
        let claim = try await subject.store.claimDue(at: now, limit: 10, lease: .seconds(30)) { _ in true }
        #expect(claim.entries.isEmpty)
        #expect(try await subject.store.entries(matching: OutboxFilter(statuses: [.inFlight])).map(\.id) == [second])
        try await subject.store.recordSuccess(second, serverID: nil, at: now)
        #expect(try await subject.store.dueIDs(at: now) == [first])
        try await subject.close()
    }

    @Test("nor ahead of a head that was already sent and waits for its retry, across a reopen too", arguments: StoreKind.allCases)
    func retryBehindAnAttemptedHead(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let retryAt = now.addingTimeInterval(60)
        let first = try await subject.store.add(request(payload: "first", scope: "s"))
        let second = try await subject.store.add(request(payload: "second", scope: "s"))
        let third = try await subject.store.add(request(payload: "third", scope: "s"))
        _ = try await subject.store.quarantine(first, OutboxFailure(.permanent, message: "by hand"))
        _ = try await subject.store.beginAttempt(second, at: now, lease: .seconds(30))
        _ = try await subject.store.recordFailure(second, OutboxFailure(.transient, httpStatus: 503, message: "503"), retryAt: retryAt)
        _ = try await subject.store.retry(first, at: now)
        // `second` may have reached the server: it stays the head.
        #expect(try await subject.store.dueIDs(at: now).isEmpty)
        try await subject.reopen(now: now)
        #expect(try await subject.store.dueIDs(at: now).isEmpty)
        try await subject.store.deliverOneAtATime([second], at: retryAt)
        try await subject.reopen(now: retryAt)
        // Then the rest of the scope in sequence order.
        try await subject.store.deliverOneAtATime([first], at: retryAt)
        #expect(try await subject.store.dueIDs(at: retryAt) == [third])
        try await subject.close()
    }

    @Test("a head that crashed in flight stays the head after the reopen, ahead of a retried older entry")
    func retryBehindAHeadLeftInFlightByACrash() async throws {
        var subject = try await StoreUnderTest.make(.log)
        let now = Date()
        let first = try await subject.store.add(request(payload: "first", scope: "s"))
        let second = try await subject.store.add(request(payload: "second", scope: "s"))
        _ = try await subject.store.quarantine(first, OutboxFailure(.permanent, message: "by hand"))
        _ = try await subject.store.beginAttempt(second, at: now, lease: .seconds(30))
        _ = try await subject.store.retry(first, at: now)
        try await subject.reopen(now: now)  // `second` comes back pending, its attempt counted
        #expect(try await subject.store.entry(second)?.status == .pending)
        #expect(try await subject.store.dueIDs(at: now) == [second])
        try await subject.close()
    }

    @Test("an id discarded and enqueued again never closes a loop of dependencies; retry refuses what could never go", arguments: StoreKind.allCases)
    func reusedIDs(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let first = OutboxEntry.ID()
        try await subject.store.add(request(first, payload: "first", scope: "s"))
        let child = try await subject.store.add(request(payload: "child", scope: "s", dependencies: [first]))
        #expect(try await subject.store.discard(first).dependents == [child])  // the child dies with it
        // The same id again, now depending on the (quarantined) child: quarantined at once.
        guard case .enqueued(let again) = try await subject.store.enqueue(request(first, payload: "again", dependencies: [child]))
        else { throw CancellationError() }
        #expect(again.status == .quarantined)
        try await subject.reopen(now: now)
        // The child depended on the first entry with that id, not this one.
        #expect(try await subject.store.dependents(of: first).isEmpty)
        await expectOutboxError(.invalidTransition) { try await subject.store.retry(child, at: now) }
        await expectOutboxError(.invalidTransition) { try await subject.store.retry(first, at: now) }
        #expect(try await subject.store.summary().unsent == 0)
        _ = try await subject.store.discard(child)
        _ = try await subject.store.discard(first)
        try await subject.reopen(now: now)
        #expect(try await subject.store.summary().total == 0)
        try await subject.close()
    }
}
