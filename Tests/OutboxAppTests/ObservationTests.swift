import Foundation
import Outbox
import Testing

/// Observing one entry and the whole queue through the
/// dispatcher, on a manual clock, waiting on the observations themselves
/// (never on time).
@Suite("Observation", .timeLimit(.minutes(5)))
struct ObservationTests {
    @Test("status(of:) tells an entry's state, and delivered entries keep answering with their server id")
    func statusOfOneEntry() async throws {
        let app = App()
        await app.server.failFirstDelivery(retryAfter: .seconds(30), thenDeliverAs: "srv-1")
        let id = try await app.add(Post(text: "hello"))
        #expect(try await app.dispatcher.status(of: id)?.status == .pending)
        await app.dispatcher.flush()
        let waiting = try #require(try await app.dispatcher.status(of: id))
        #expect(waiting.status == .waitingToRetry)
        #expect(waiting.nextAttemptAt == app.clock.now().addingTimeInterval(30))
        #expect(waiting.lastFailure?.httpStatus == 500)
        #expect(waiting.attempts == 1)
        app.clock.advance(by: .seconds(30))
        await app.dispatcher.flush()
        let delivered = try #require(try await app.dispatcher.status(of: id))
        #expect(delivered.status == .succeeded)
        #expect(delivered.serverID == "srv-1")
        #expect(try await app.dispatcher.status(of: OutboxEntry.ID()) == nil)
    }

    @Test("updates(of:) yields the entry's state now and on every change, and ends once it is delivered")
    func updatesOfOneEntry() async throws {
        let app = App()
        await app.server.failFirstDelivery(retryAfter: .seconds(30), thenDeliverAs: "srv-2")
        let id = try await app.add(Post(text: "hello"))
        let updates = app.dispatcher.updates(of: id)  // subscribed here: nothing after this is missed
        let seen = Task {
            var statuses: [OutboxStatus] = []
            for try await state in updates { statuses.append(state.status) }
            return statuses
        }
        await app.dispatcher.flush()
        app.clock.advance(by: .seconds(30))
        await app.dispatcher.flush()
        let statuses = try await seen.value
        #expect(statuses.first == .pending)
        #expect(statuses.last == .succeeded)
        #expect(statuses.contains(.waitingToRetry))
    }

    @Test("waitUntilDelivered returns the server id, or throws the quarantine reason")
    func waitUntilDelivered() async throws {
        let app = App()
        await app.server.setAnswer { delivery, _ in
            delivery.text == "rejected" ? .permanent(reason: "HTTP 422: too long", httpStatus: 422) : .delivered(serverID: "srv-\(delivery.text)")
        }
        let good = try await app.add(Post(text: "good"))
        let bad = try await app.add(Post(text: "rejected"))
        let child = try await app.add(Post(text: "child", after: [bad]))
        async let goodID = app.dispatcher.waitUntilDelivered(good)
        async let badResult: Result<String?, any Error> = {
            do { return .success(try await app.dispatcher.waitUntilDelivered(bad)) } catch { return .failure(error) }
        }()
        await app.dispatcher.flush()
        #expect(try await goodID == "srv-good")
        guard case .failure(let error) = await badResult, let failure = error as? OutboxDeliveryFailure else {
            Issue.record("waiting for the rejected entry did not throw its failure")
            return
        }
        #expect(failure.kind == .quarantined)
        #expect(failure.failure == OutboxFailure(.permanent, httpStatus: 422, message: "HTTP 422: too long"))
        // Its dependent, and a delivered entry waited for again: settled at once.
        await #expect(throws: OutboxDeliveryFailure.self) { try await app.dispatcher.waitUntilDelivered(child) }
        #expect(try await app.dispatcher.waitUntilDelivered(good) == "srv-good")
        await #expect(throws: OutboxError.self) { try await app.dispatcher.waitUntilDelivered(OutboxEntry.ID()) }
    }

    @Test("a discarded entry's waiter is told it was removed without delivery (or, if it asks after, that there is no such entry)")
    func waitForADiscardedEntry() async throws {
        let app = App()
        await app.dispatcher.pause()
        let id = try await app.add(Post(text: "never sent"))
        let waiter = Task { try await app.dispatcher.waitUntilDelivered(id) }
        try await app.dispatcher.discard(id)
        do {
            _ = try await waiter.value
            Issue.record("the waiter returned")
        } catch let failure as OutboxDeliveryFailure {
            #expect(failure.kind == .discarded)  // it was waiting when the entry went
        } catch let error as OutboxError {
            #expect(error.code == .notFound)  // it started after: the id is unknown by then
        }
    }

    @Test("cancelling a waiter ends the wait with CancellationError")
    func cancelledWait() async throws {
        let app = App()
        await app.dispatcher.pause()
        let id = try await app.add(Post(text: "waiting"))
        let waiter = Task { try await app.dispatcher.waitUntilDelivered(id) }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    @Test("the queue's state: counts and bytes by status, oldest unsent entry, next retry, paused and online")
    func queueState() async throws {
        let app = App()
        await app.server.setAnswer { delivery, _ in
            delivery.text == "flaky" ? .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: .seconds(60)) : .delivered(serverID: nil)
        }
        let created = app.clock.now()
        _ = try await app.add(Post(text: "flaky"))
        app.clock.advance(by: .seconds(10))
        _ = try await app.add(Post(text: "fine", topic: "other"))
        var state = try await app.dispatcher.queueState()
        #expect(state.summary.unsent == 2)
        #expect(state.summary.oldestUnsentAt == created)
        #expect(state.summary.oldestUnsentAge(at: app.clock.now()) == 10)
        #expect(!state.isIdle)  // both are due
        await app.dispatcher.flush()
        state = try await app.dispatcher.queueState()
        #expect(state.summary.count(.waitingToRetry) == 1)
        #expect(state.summary.bytes[.waitingToRetry] ?? 0 > 0)
        #expect(state.summary.nextAttemptAt == app.clock.now().addingTimeInterval(60))
        #expect(state.isIdle)  // the retry is not due yet
        await app.dispatcher.pause()
        await app.dispatcher.connectivityChanged(isOnline: false)
        state = try await app.dispatcher.queueState()
        #expect(state.isPaused && !state.isOnline)
        #expect(await app.dispatcher.isPaused)
        #expect(await !app.dispatcher.isOnline)
    }

    @Test("queueUpdates yields the queue's state when it changes, for a pending-writes badge")
    func queueUpdates() async throws {
        let app = App()
        var badge = app.dispatcher.queueUpdates().makeAsyncIterator()
        #expect(try await badge.next()?.summary.unsent == 0)
        await app.dispatcher.pause()
        try await app.dispatcher.enqueue(Post(text: "one"))
        try await app.dispatcher.enqueue(Post(text: "two"))
        var state = try #require(try await badge.next())
        while state.summary.unsent < 2 { state = try #require(try await badge.next()) }
        #expect(state.isPaused)
        #expect(state.isIdle)  // paused: nothing it may send
        await app.dispatcher.resume()
        while !(state.summary.unsent == 0 && state.isIdle) { state = try #require(try await badge.next()) }
        #expect(await app.server.deliveries.count == 2)
    }

    @Test("waitUntilIdle returns once nothing is due; entries waiting for a retry time do not hold it")
    func idle() async throws {
        let app = App()
        await app.server.setAnswer { delivery, _ in
            delivery.text == "later" ? .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: .seconds(60)) : .delivered(serverID: nil)
        }
        try await app.dispatcher.enqueue(Post(text: "now"))
        try await app.dispatcher.enqueue(Post(text: "later", topic: "t"))
        try await app.dispatcher.waitUntilIdle()
        let state = try await app.dispatcher.queueState()
        #expect(state.isIdle)
        #expect(state.summary.count(.waitingToRetry) == 1)
        #expect(state.summary.unsent == 1)
    }

    @Test("waitForPendingWrites waits for what was unsent at the call, and says what became of it")
    func pendingWrites() async throws {
        let app = App()
        await app.server.setAnswer { delivery, earlier in
            switch (delivery.text, earlier) {
            case ("rejected", _): .permanent(reason: "HTTP 422", httpStatus: 422)
            case ("flaky", 0): .transient(reason: "HTTP 503", httpStatus: 503, retryAfter: .seconds(5))
            default: .delivered(serverID: nil)
            }
        }
        let a = try await app.add(Post(text: "a", topic: "x"))
        let flaky = try await app.add(Post(text: "flaky", topic: "y"))
        let rejected = try await app.add(Post(text: "rejected", topic: "z"))
        let waiting = Task { try await app.dispatcher.waitForPendingWrites() }
        await app.dispatcher.flush()
        app.clock.advance(by: .seconds(5))
        await app.dispatcher.flush()
        let result = try await waiting.value
        #expect(Set(result.delivered) == [a, flaky])
        #expect(result.notDelivered.map(\.id) == [rejected])
        #expect(result.notDelivered.first?.kind == .quarantined)
    }

    @Test("a store failure during a drain is published as an event, not only logged")
    func storeFailureIsAnEvent() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let app = App(store: store)
        let events = app.dispatcher.events()
        _ = try await app.add(Post(text: "hello"))
        try await store.close()  // every later call fails: the drain cannot claim
        await app.dispatcher.flush()
        await app.dispatcher.stop()  // ends the stream
        var failures: [OutboxError] = []
        for await event in events {
            if case .storeFailed(_, let error) = event { failures.append(error) }
        }
        #expect(failures.contains { $0.code == .closed })
    }
}

@Suite("Observation across dispatchers", .timeLimit(.minutes(5)))
struct SharedFeedTests {
    @Test("two dispatchers on one store: each events() stream gets its own dispatcher's events, and stop() ends only its own")
    func eventStreamsBelongToTheirDispatcher() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let first = App(store: store)
        let second = App(store: store)
        let firstEvents = first.dispatcher.events()
        let secondEvents = second.dispatcher.events()
        let early = try await first.add(Post(text: "early"))
        await first.dispatcher.flush()
        await first.dispatcher.stop()
        let late = try await second.add(Post(text: "late"))
        await second.dispatcher.flush()  // publishes after the first stopped
        await second.dispatcher.stop()
        var firstSaw: [OutboxEvent] = []
        for await event in firstEvents { firstSaw.append(event) }
        var secondSaw: [OutboxEvent] = []
        for await event in secondEvents { secondSaw.append(event) }
        #expect(firstSaw.contains { if case .delivered(early, _) = $0 { true } else { false } })
        #expect(secondSaw.contains { if case .delivered(late, _) = $0 { true } else { false } })
        #expect(!firstSaw.contains { $0.entryID == late })
        #expect(!secondSaw.contains { $0.entryID == early })
    }
}
