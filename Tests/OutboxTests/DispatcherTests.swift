import CLITestSupport
import Foundation
import Outbox
import OutboxLocking
import Testing

/// The dispatcher against scripted handlers and a manual clock: no real
/// network, no sleeping through backoff.
@Suite("Dispatcher", .timeLimit(.minutes(5)))
struct DispatcherTests {
    @Test("a flush delivers what is due, records the server id, and reports each step as an event")
    func deliversAndReports() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("first", .delivered(serverID: "s-1"))
        let first = try await fixture.add("first")
        let second = try await fixture.add("second")
        let report = await fixture.dispatcher.flush()
        #expect(report.delivered == 2)
        #expect(try await fixture.store.summary().total == 0)
        #expect(try await fixture.store.completion(of: first)?.serverID == "s-1")
        let delivery = try #require(fixture.handler.deliveries(of: first).first)
        #expect(delivery.attempt == 1)
        #expect(UUID(uuidString: delivery.idempotencyKey) != nil)
        await fixture.events.wait { events in events.compactMap(\.deliveredID).count == 2 }
        #expect(fixture.events.all.contains(.sending(second, attempt: 1)))
        #expect(fixture.events.all.contains(.delivered(first, serverID: "s-1")))
    }

    @Test("a transient failure backs off with jitter, honours Retry-After, and the timer sends it when due")
    func backoffAndTimer() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script(
            "flaky", .transient(reason: "500", httpStatus: 500, retryAfter: nil),
            .transient(reason: "408", httpStatus: 408, retryAfter: .seconds(120)), .delivered(serverID: nil))
        let id = try await fixture.add("flaky")
        let start = fixture.clock.now()
        let first = await fixture.dispatcher.flush()
        #expect(first.waitingToRetry == 1)
        let afterFirst = try #require(try await fixture.store.entry(id))
        #expect(afterFirst.status == .waitingToRetry)
        // Full jitter: within [0, base] for the first retry.
        #expect(afterFirst.nextAttemptAt >= start && afterFirst.nextAttemptAt <= start.addingTimeInterval(1))
        #expect(afterFirst.lastFailure?.httpStatus == 500)
        // Nothing is sent again before its time.
        #expect(await fixture.dispatcher.flush().waitingToRetry == 0)
        #expect(fixture.handler.deliveries.count == 1)

        // The timer wakes the dispatcher at the retry time: no new write needed.
        fixture.clock.set(to: afterFirst.nextAttemptAt)
        await fixture.events.wait { $0.filter(\.isWaitingToRetry).count == 2 }
        let afterSecond = try #require(try await fixture.store.entry(id))
        #expect(abs(afterSecond.nextAttemptAt.timeIntervalSince(fixture.clock.now()) - 120) < 0.01)  // Retry-After wins
        fixture.clock.advance(by: .seconds(120))
        await fixture.events.wait { $0.contains { $0.deliveredID == id } }
        #expect(fixture.handler.deliveries(of: id).map(\.attempt) == [1, 2, 3])
        #expect(Set(fixture.handler.deliveries(of: id).map(\.idempotencyKey)).count == 1)
    }

    @Test("maxAttempts and maximum age quarantine an entry, never drop it")
    func givingUp() async throws {
        let fixture = DispatcherFixture { $0.maximumAge = .seconds(3600) }
        fixture.handler.script("doomed", .transient(reason: "offline", httpStatus: nil, retryAfter: .seconds(1)))
        let doomed = try await fixture.add("doomed", maxAttempts: 2)
        await fixture.dispatcher.flush()
        fixture.clock.advance(by: .seconds(1))
        await fixture.dispatcher.flush()
        let dead = try #require(try await fixture.store.entry(doomed))
        #expect(dead.status == .quarantined)
        #expect(dead.lastFailure?.cause == .attemptsUsedUp)

        // The server answers (its first answer starts the maximum age) with a
        // Retry-After past it: 7200 s, clamped to the 1 h cap, still ends at
        // or after the hour.
        fixture.handler.script("old", .transient(reason: "busy", httpStatus: 503, retryAfter: .seconds(7200)))
        let old = try await fixture.add("old")
        await fixture.dispatcher.flush()
        #expect(try await fixture.store.status(old) == .quarantined)
        #expect(try await fixture.store.entry(old)?.lastFailure?.cause == .expired)
        await fixture.events.wait { events in events.filter { if case .quarantined = $0 { true } else { false } }.count == 2 }
    }

    @Test("a permanent failure quarantines the entry and its dependents; nothing else is blocked")
    func poisonEntry() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("poison", .permanent(reason: "422 invalid", httpStatus: 422))
        let poison = try await fixture.add("poison", scope: "chat-1")
        let child = try await fixture.add("child", dependencies: [poison])
        let sameScope = try await fixture.add("same scope, after", scope: "chat-1")
        let otherScope = try await fixture.add("other scope", scope: "chat-2")
        let report = await fixture.dispatcher.flush()
        #expect(report.delivered == 2)
        #expect(report.quarantined == 2)
        #expect(try await fixture.store.entry(poison)?.lastFailure?.httpStatus == 422)
        #expect(try await fixture.store.entry(child)?.lastFailure?.cause == .dependency(.quarantined(poison)))
        #expect(try await fixture.store.completion(of: sameScope) != nil)
        #expect(try await fixture.store.completion(of: otherScope) != nil)
        #expect(fixture.handler.deliveries(of: child).isEmpty)

        // The app retries the parent after fixing the server: both go.
        fixture.handler.script("poison", .delivered(serverID: "p"))
        try await fixture.dispatcher.retry(poison)
        await fixture.events.wait { events in events.contains { $0.deliveredID == child } }
    }

    @Test("conflict policies: server wins discards, manual waits, client wins resends", arguments: [
        OutboxConflictPolicy.serverWins, .manual, .clientWins,
    ])
    func conflicts(policy: OutboxConflictPolicy) async throws {
        let fixture = DispatcherFixture(handler: ScriptedHandler(conflictPolicy: policy))
        fixture.handler.script("edit", .conflict(reason: "409 version", httpStatus: 409))
        let id = try await fixture.add("edit")
        let report = await fixture.dispatcher.flush()
        #expect(report.conflicts == 1)
        switch policy {
        case .serverWins:
            #expect(try await fixture.store.entry(id) == nil)
            await fixture.events.wait { $0.contains { if case .discarded(id, _) = $0 { true } else { false } } }
        case .manual:
            #expect(try await fixture.store.status(id) == .conflict)
            await fixture.events.wait { $0.contains { if case .conflict(id, _) = $0 { true } else { false } } }
        case .clientWins:
            #expect(fixture.handler.resends == 1)
            #expect(try await fixture.store.completion(of: id)?.serverID == "forced")
        }
    }

    @Test("a thrown error and a delivery past its timeout are transient")
    func thrownAndTimedOut() async throws {
        struct Boom: Error {}
        let hang = Locked(true)
        let handler = ScriptedHandler(onDeliver: { delivery in
            let text = String(decoding: delivery.entry.payload, as: UTF8.self)
            if text == "throws" { throw Boom() }
            if text == "hangs", hang.withLock({ $0 }) {
                // Never returns on its own: only the watchdog's cancellation ends it.
                try await suspendUntilCancelled()
            }
        })
        let fixture = DispatcherFixture(handler: handler) { $0.deliveryTimeout = .seconds(30) }
        let throwing = try await fixture.add("throws")
        let hanging = try await fixture.add("hangs")
        let flush = Task { await fixture.dispatcher.flush() }
        // Wait until the watchdog sleeps, then let time pass.
        while fixture.clock.sleeperCount == 0 { await Task.yield() }
        fixture.clock.advance(by: .seconds(31))
        let report = await flush.value
        // The throwing entry may have come due again within the 31 s and failed again.
        #expect(report.waitingToRetry >= 1)
        // A delivery past its timeout may have been sent: interrupted, resent soon, not counted.
        #expect(report.interrupted == 1)
        #expect(try await fixture.store.entry(throwing)?.lastFailure?.cause == .handlerError)
        #expect(try await fixture.store.entry(hanging)?.lastFailure?.cause == .interrupted)
        #expect(try await fixture.store.entry(hanging)?.lastFailure?.message?.contains("delivery timeout") == true)
        #expect(try await fixture.store.entry(hanging)?.attempts == 0)
        #expect(try await fixture.store.status(hanging) == .waitingToRetry)
    }

    @Test("concurrent flushes never send the same entry twice")
    func concurrentFlushes() async throws {
        let fixture = DispatcherFixture(handler: ScriptedHandler(onDeliver: { _ in await Task.yield() })) {
            $0.maximumConcurrentDeliveries = 8
        }
        var ids: [OutboxEntry.ID] = []
        for i in 0..<60 { ids.append(try await fixture.add("n\(i)", scope: i % 3 == 0 ? "s\(i % 5)" : nil)) }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { await fixture.dispatcher.flush() } }
        }
        await fixture.dispatcher.flush()
        for id in ids { #expect(fixture.handler.deliveries(of: id).count == 1, "\(id)") }
        #expect(try await fixture.store.summary().total == 0)
    }

    @Test("an entry whose type has no handler is left alone and reported, and blocks nothing else")
    func unhandledType() async throws {
        let fixture = DispatcherFixture()
        let orphan = try await fixture.add("orphan", type: "feature_that_was_removed")
        let fine = try await fixture.add("fine")
        let report = await fixture.dispatcher.flush()
        #expect(report.unhandled == 1)
        #expect(report.delivered == 1)
        #expect(try await fixture.store.status(orphan) == .pending)
        #expect(try await fixture.store.entry(orphan)?.attempts == 0)
        #expect(try await fixture.store.completion(of: fine) != nil)
        await fixture.events.wait { $0.contains(.unhandled(orphan, type: "feature_that_was_removed")) }
    }

    @Test("local: ids in the endpoint and JSON string values are replaced with the parent's server id")
    func remapping() async throws {
        let fixture = DispatcherFixture()
        let album = OutboxEntry.ID()
        fixture.handler.script("album", .delivered(serverID: "album/77"))
        try await fixture.store.enqueue(
            OutboxEnqueueRequest(id: album, type: "post", method: "POST", endpoint: "/albums", payload: Array("album".utf8)))
        let body = #"{"album": "\#(album.localReference)", "caption": "see \#(album.localReference)", "\#(album.localReference)": 1, "n": 1.50}"#
        let photo = try await fixture.store.enqueue(
            OutboxEnqueueRequest(
                type: "post", method: "POST", endpoint: "/albums/\(album.localReference)/photos?album=\(album.localReference)",
                payload: Array(body.utf8), dependencies: [album])
        ).id
        await fixture.dispatcher.flush()
        let delivery = try #require(fixture.handler.deliveries(of: photo).first)
        #expect(delivery.endpoint == "/albums/album%2F77/photos?album=album/77")
        let sent = String(decoding: delivery.payload, as: UTF8.self)
        // Only the whole string value changed; the key, the prose and "1.50" are as they were.
        #expect(sent == #"{"album": "album\/77", "caption": "see \#(album.localReference)", "\#(album.localReference)": 1, "n": 1.50}"#)
        #expect(delivery.entry.payload == Array(body.utf8))  // the stored entry is untouched
        await fixture.events.wait { $0.contains(.remapped(photo, local: album, serverID: "album/77")) }
    }

    @Test("offline and paused dispatchers send nothing; coming back online flushes")
    func offlineAndPause() async throws {
        let fixture = DispatcherFixture()
        let monitor = ManualConnectivityMonitor(online: false)
        await fixture.dispatcher.start(connectivity: monitor)
        try await fixture.dispatcher.enqueue(Note(text: "written offline"))
        #expect(await fixture.dispatcher.flush().delivered == 0)
        #expect(fixture.handler.deliveries.isEmpty)
        monitor.setOnline(true)
        await fixture.events.wait { events in events.contains { $0.deliveredID != nil } }

        await fixture.dispatcher.pause()
        let paused = try await fixture.dispatcher.enqueue(Note(text: "while paused")).id
        // (A flush may join the drain that delivered the first note: judge by the entry.)
        await fixture.dispatcher.flush()
        #expect(fixture.handler.deliveries(of: paused).isEmpty)
        #expect(try await fixture.store.status(paused) == .pending)
        await fixture.dispatcher.resume()
        await fixture.events.wait { events in events.compactMap(\.deliveredID).count == 2 }
        await fixture.dispatcher.stop()
    }

    @Test("enqueueing through the dispatcher publishes the entry and sends it without an explicit flush")
    func facade() async throws {
        let fixture = DispatcherFixture()
        let result = try await fixture.dispatcher.enqueue(Note(text: "hello", conversation: "c-1"))
        let entry = try #require(result.newEntry, "expected a new entry")
        #expect(entry.scope == "c-1")
        await fixture.events.wait { $0.contains(.enqueued(entry)) && $0.contains { $0.deliveredID == entry.id } }
        let summary = try await fixture.dispatcher.summary()
        #expect(summary.unsent == 0)
    }
}
