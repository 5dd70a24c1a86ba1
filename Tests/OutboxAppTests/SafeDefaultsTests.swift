import Foundation
import Outbox
import Testing

/// The defaults survive an ordinary bad week — a day of
/// 503s, a week offline — and unscoped entries go in order, as the seeds
/// promise, unless the app opts into concurrency.
@Suite("Safe defaults", .timeLimit(.minutes(5)))
struct SafeDefaultsTests {
    static let day: TimeInterval = 24 * 3600

    /// An app whose server gives every delivery `failure` until a day and a
    /// minute have passed on the app's clock, and delivers as `serverID` after.
    static func appThroughABadDay(answering failure: OutboxOutcome, thenDeliverAs serverID: String) async -> App {
        let app = App()
        let end = app.clock.now().addingTimeInterval(day + 60)
        let clock = app.clock
        await app.server.setAnswer { _, _ in clock.now() < end ? failure : .delivered(serverID: serverID) }
        return app
    }

    @Test("a day of 503s (no Retry-After) uses up no attempts: the write is delivered when the server is back")
    func dayOfServiceUnavailable() async throws {
        let app = await Self.appThroughABadDay(
            answering: .transient(reason: "HTTP 503", httpStatus: 503, retryAfter: nil), thenDeliverAs: "p-1")
        let id = try await app.add(Post(text: "hello"))
        try await app.pump { try await app.delivered(id) }
        #expect(try await app.store.completion(of: id)?.serverID == "p-1")
        let attempts = await app.server.deliveries(of: id).count
        #expect(attempts > 10)  // more than the default maxAttempts, none of them counted
    }

    @Test("a day of 429s with a Retry-After of half an hour: delivered after it")
    func dayOfTooManyRequests() async throws {
        let app = await Self.appThroughABadDay(
            answering: .transient(reason: "HTTP 429", httpStatus: 429, retryAfter: .seconds(1800)), thenDeliverAs: "p-2")
        let id = try await app.add(Post(text: "hello"))
        try await app.pump { try await app.delivered(id) }
        #expect(try await app.store.completion(of: id)?.serverID == "p-2")
    }

    @Test("a week offline never expires a write, even one the server answered 503 just before")
    func weekOfflineAfterAnAnswer() async throws {
        let app = App()
        let start = app.clock.now()
        let clock = app.clock
        await app.server.setAnswer { _, earlier in
            if earlier == 0 { return .transient(reason: "HTTP 503", httpStatus: 503, retryAfter: nil) }
            return clock.now() < start.addingTimeInterval(8 * Self.day)
                ? .notSent(reason: "the network is down") : .delivered(serverID: "p-3")
        }
        let answered = try await app.add(Post(text: "answered once"))
        let neverAnswered = try await app.add(Post(text: "never answered"))
        // The app tries about once an hour for eight days (every retry comes
        // due well within an hour: the default backoff's cap is 5 minutes),
        // a few hundred rounds instead of one per retry.
        for _ in 0..<(8 * 24) {
            await app.dispatcher.flush()
            clock.advance(by: .seconds(3600))
        }
        #expect(try await app.status(answered) != .quarantined)
        try await app.pump {
            let first = try await app.delivered(answered)
            let second = try await app.delivered(neverAnswered)
            return first && second
        }
        #expect(try await app.store.completion(of: answered)?.serverID == "p-3")
    }

    @Test("the maximum age still ends a server that answers 503 for more than a week: quarantined, never dropped")
    func maximumAgeEndsAnEndlessOutage() async throws {
        let app = App()
        await app.server.setAnswer { _, _ in .transient(reason: "HTTP 503", httpStatus: 503, retryAfter: .seconds(3600)) }
        let start = app.clock.now()
        let id = try await app.add(Post(text: "doomed"))
        let child = try await app.add(Post(text: "child", after: [id]))
        try await app.pump { try await app.status(id) == .quarantined }
        let entry = try #require(try await app.store.entry(id))
        #expect(entry.lastFailure?.cause == .expired)
        #expect(entry.lastFailure?.httpStatus == 503)
        #expect(try await app.status(child) == .quarantined)
        #expect(app.clock.now() >= start.addingTimeInterval(7 * Self.day - 3600))
    }

    @Test("a request that keeps failing with 500 is quarantined after maxAttempts, as before")
    func serverErrorsCount() async throws {
        let app = App()
        await app.server.setAnswer { _, _ in .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: nil) }
        let id = try await app.add(Post(text: "poison"))
        try await app.pump { try await app.status(id) == .quarantined }
        #expect(await app.server.deliveries(of: id).count == 10)  // the store's default maxAttempts
        #expect(try await app.store.entry(id)?.lastFailure?.cause == .attemptsUsedUp)
    }

    @Test("unscoped entries go one at a time, in the order they were enqueued, whatever their priority")
    func unscopedEntriesGoInOrder() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let server = ScriptedServer()
        let overlaps = OverlapCounter()
        await server.setAnswer { _, _ in .delivered(serverID: nil) }
        let app = App(server: server, store: store)
        var ids: [OutboxEntry.ID] = []
        for index in 0..<6 {
            ids.append(try await store.enqueue(
                try OutboxEnqueueRequest(Post(text: "post \(index)"), createdAt: app.clock.now())).id)
        }
        // A later entry with a higher priority does not overtake the queue.
        var urgent = try OutboxEnqueueRequest(Post(text: "urgent"), createdAt: app.clock.now())
        urgent.priority = 100
        ids.append(try await store.enqueue(urgent).id)
        let probe = ClosureOutboxHandler { delivery in
            await overlaps.enter(try await store.summary().count(.inFlight))
            return await server.deliver(delivery)
        }
        let dispatcher = OutboxDispatcher(store: store, handlers: [Post.type: probe], clock: app.clock)
        await dispatcher.flush()
        #expect(await server.deliveries.map(\.id) == ids)
        #expect(await overlaps.most == 1)
    }

    @Test("a failed unscoped entry holds the ones after it until its retry; a quarantined one steps aside")
    func failedHeadHoldsTheQueue() async throws {
        let app = App()
        await app.server.setAnswer { delivery, earlier in
            switch (delivery.text, earlier) {
            case ("first", 0): .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: .seconds(10))
            case ("bad", _): .permanent(reason: "HTTP 422", httpStatus: 422)
            default: .delivered(serverID: nil)
            }
        }
        let first = try await app.add(Post(text: "first"))
        let second = try await app.add(Post(text: "second"))
        await app.dispatcher.flush()
        #expect(await app.server.deliveries.map(\.text) == ["first"])
        #expect(try await app.status(second) == .pending)
        app.clock.advance(by: .seconds(10))
        let bad = try await app.add(Post(text: "bad"))
        let last = try await app.add(Post(text: "last"))
        await app.dispatcher.flush()
        #expect(await app.server.deliveries.map(\.text) == ["first", "first", "second", "bad", "last"])
        for id in [first, second, last] { #expect(try await app.delivered(id)) }
        #expect(try await app.status(bad) == .quarantined)
    }

    @Test("an unscoped entry waiting for a parent left in conflict holds back no other unscoped write")
    func dependentsStepAside() async throws {
        let app = App()
        await app.server.setAnswer { delivery, _ in
            delivery.text == "parent" ? .alreadyProcessed(reason: "HTTP 410", httpStatus: 410) : .delivered(serverID: nil)
        }
        let parent = try await app.add(Post(text: "parent"))
        let child = try await app.add(Post(text: "child", after: [parent]))
        let later = try await app.add(Post(text: "later"))
        await app.dispatcher.flush()
        #expect(try await app.status(parent) == .conflict)  // needs the app
        #expect(try await app.status(child) == .pending)    // waits for it…
        #expect(try await app.delivered(later))            // …and holds nothing back
    }

    @Test("with unscopedDelivery = .concurrent, unscoped entries go independently: a failing one holds nothing")
    func concurrencyIsAnOptIn() async throws {
        var configuration = quietStoreConfiguration()
        configuration.unscopedDelivery = .concurrent
        let app = App(store: InMemoryOutboxStore(partition: "user", configuration: configuration))
        await app.server.setAnswer { delivery, _ in
            delivery.text == "first" ? .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: .seconds(10)) : .delivered(serverID: nil)
        }
        let first = try await app.add(Post(text: "first"))
        let second = try await app.add(Post(text: "second"))
        await app.dispatcher.flush()
        #expect(try await app.delivered(second))
        #expect(try await app.status(first) == .waitingToRetry)
    }

    @Test("the order of unscoped entries survives a reopen of the log store")
    func orderSurvivesReopen() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-app-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let configuration = quietStoreConfiguration()
        var store = try await LogOutboxStore.open(root: root, partition: "user", configuration: configuration)
        var ids: [OutboxEntry.ID] = []
        for index in 0..<5 { ids.append(try await store.enqueue(try OutboxEnqueueRequest(Post(text: "post \(index)"))).id) }
        // The head was attempted and failed: it keeps the lead after the reopen.
        let claim = try await store.claimDue(at: Date(), limit: 4, lease: .seconds(60)) { _ in true }
        #expect(claim.entries.map(\.id) == [ids[0]])
        _ = try await store.recordFailure(ids[0], OutboxFailure(.transient, httpStatus: 500, message: "HTTP 500"), retryAt: Date())
        try await store.close()
        store = try await LogOutboxStore.open(root: root, partition: "user", configuration: configuration)
        let server = ScriptedServer()
        let dispatcher = OutboxDispatcher(store: store, handlers: [Post.type: server.handler])
        await dispatcher.flush()
        #expect(await server.deliveries.map(\.id) == ids)
        try await store.close()
    }
}

/// The most attempts seen in flight at once.
actor OverlapCounter {
    private(set) var most = 0
    func enter(_ inFlight: Int) { most = max(most, inFlight) }
}
