import Foundation
import Outbox
import Testing

/// Send now, bulk retry and discard, coming back online,
/// pause and resume, and the retention of quarantined entries.
@Suite("Controls", .timeLimit(.minutes(5)))
struct ControlsTests {
    @Test("retry(id) on an entry waiting for its retry time sends it now, its attempts kept")
    func sendNow() async throws {
        let app = App()
        await app.server.failFirstDelivery(retryAfter: .seconds(600), thenDeliverAs: "now")
        let id = try await app.add(Post(text: "hello"))
        await app.dispatcher.flush()
        #expect(try await app.dispatcher.status(of: id)?.nextAttemptAt == app.clock.now().addingTimeInterval(600))
        try await app.dispatcher.retry(id)
        #expect(try await app.dispatcher.waitUntilDelivered(id) == "now")  // the clock never moved
        #expect(await app.server.deliveries(of: id).map(\.attempt) == [1, 2])
    }

    @Test("retryAll brings back every quarantined entry (a parent with its dependents); discard(where:) removes what matches")
    func bulkControls() async throws {
        let app = App()
        await app.server.setAnswer { delivery, earlier in
            earlier == 0 && delivery.text.hasPrefix("bad") ? .permanent(reason: "HTTP 422", httpStatus: 422) : .delivered(serverID: nil)
        }
        let parent = try await app.add(Post(text: "bad parent", topic: "a"))
        let child = try await app.add(Post(text: "child", topic: "b", after: [parent]))
        let other = try await app.add(Post(text: "bad other", topic: "c"))
        let junk = try await app.add(Post(text: "bad junk", topic: "d"))
        await app.dispatcher.flush()
        #expect(try await app.store.summary().count(.quarantined) == 4)
        let discarded = try await app.dispatcher.discard { $0.payload == Array("bad junk".utf8) }
        #expect(discarded == [junk])
        let retried = try await app.dispatcher.retryAll()
        #expect(Set(retried) == [parent, other])  // the child came back with its parent
        for id in [parent, child, other] { _ = try await app.dispatcher.waitUntilDelivered(id) }
        #expect(try await app.dispatcher.status(of: junk) == nil)
    }

    @Test("coming back online sends at once what backed off while the network was down")
    func connectivityBringsRetriesForward() async throws {
        let app = App()
        await app.server.setAnswer { _, _ in .notSent(reason: "the network is unreachable") }
        let ids = [try await app.add(Post(text: "a", topic: "a")), try await app.add(Post(text: "b", topic: "b"))]
        await app.dispatcher.flush()
        await app.dispatcher.flush()  // twice: the backoff grows
        for id in ids { #expect(try await app.dispatcher.status(of: id)?.status == .waitingToRetry) }
        await app.dispatcher.connectivityChanged(isOnline: false)
        await app.server.setAnswer { _, _ in .delivered(serverID: "back") }
        await app.dispatcher.connectivityChanged(isOnline: true)
        for id in ids { #expect(try await app.dispatcher.waitUntilDelivered(id) == "back") }  // the clock never moved
    }

    @Test("pause holds through enqueues, flushes and a stop/start cycle; resume sends")
    func pauseHolds() async throws {
        let app = App()
        await app.dispatcher.pause()
        let id = try await app.dispatcher.enqueue(Post(text: "held")).id
        await app.dispatcher.flush()
        await app.dispatcher.stop()
        await app.dispatcher.start()
        await app.dispatcher.flush()
        #expect(await app.server.deliveries.isEmpty)
        #expect(await app.dispatcher.isPaused)
        await app.dispatcher.resume()
        _ = try await app.dispatcher.waitUntilDelivered(id)
        await app.dispatcher.stop()
    }

    @Test("quarantined entries are kept for the retention window, then removed with an event")
    func quarantineRetention() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let clock = ManualOutboxClock(now: Date())  // death times are the store's wall clock
        let server = ScriptedServer { _, _ in .permanent(reason: "HTTP 422", httpStatus: 422) }
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        configuration.quarantineRetention = .seconds(24 * 3600)
        let dispatcher = OutboxDispatcher(store: store, handlers: [Post.type: server.handler], configuration: configuration, clock: clock)
        let events = dispatcher.events()
        let id = try await store.enqueue(OutboxEnqueueRequest(Post(text: "rejected"))).id
        await dispatcher.flush()
        #expect(try await dispatcher.status(of: id)?.status == .quarantined)
        clock.advance(by: .seconds(12 * 3600))
        await dispatcher.flush()
        #expect(try await dispatcher.status(of: id)?.status == .quarantined)  // kept for inspection
        clock.advance(by: .seconds(13 * 3600))
        await dispatcher.flush()
        #expect(try await dispatcher.status(of: id) == nil)
        await dispatcher.stop()
        var removal: OutboxDiscard?
        for await event in events { if case .discarded(id, let why) = event { removal = why } }
        #expect(removal == .quarantinedTooLong(.seconds(24 * 3600)), "\(removal.map(String.init(describing:)) ?? "none")")
    }
}
