import Foundation
import Outbox
import Testing

/// `OutboxDispatcher.explain(_:)`: the store's reason, with what holds every
/// write in front of it for a write that could otherwise go.
@Suite("Explaining through the dispatcher", .timeLimit(.minutes(5)))
struct ExplainDispatcherTests {
    @Test("paused, offline, stopped, no handler: each is the reason for a write that could go, with its remedy")
    func dispatcherStates() async throws {
        let app = App()
        let id = try await app.add(Post(text: "hello"))
        #expect(try await app.dispatcher.explain(id).reason == .due)
        await app.dispatcher.pause()
        #expect(try await app.dispatcher.explain(id).remedy == .resume)
        await app.dispatcher.resume()
        await app.dispatcher.connectivityChanged(isOnline: false)
        let offline = try await app.dispatcher.explain(id)
        #expect(offline.reason == .offline)
        #expect(offline.remedy == .goOnline)
        await app.dispatcher.connectivityChanged(isOnline: true)
        await app.dispatcher.stop()
        #expect(try await app.dispatcher.explain(id).reason == .stopped)

        let other = try await app.store.enqueue(OutboxEnqueueRequest(type: "comment", method: "POST", endpoint: "/comments")).id
        let fresh = App(store: app.store)
        let unhandled = try await fresh.dispatcher.explain(other)
        #expect(unhandled.reason == .noHandler(type: "comment"))
        #expect(unhandled.remedy == .registerHandler(type: "comment"))
        // A write set aside keeps its own reason: the dispatcher's state does not hide it.
        await fresh.dispatcher.pause()
        _ = try await app.store.quarantine(id, OutboxFailure(.permanent, httpStatus: 422))
        #expect(try await fresh.dispatcher.explain(id).reason == .quarantined)
    }

    @Test("a newcomer's stuck write: one call names the quarantined parent and says to retry it; retrying it delivers both")
    func stuckBehindAQuarantinedParent() async throws {
        let app = App()
        // The server refuses the parent once, for good (422); later it accepts everything.
        await app.server.setAnswer { delivery, earlier in
            delivery.text == "parent" && earlier == 0
                ? .permanent(reason: "HTTP 422", httpStatus: 422) : .delivered(serverID: "srv-\(delivery.text)")
        }
        let parent = try await app.add(Post(text: "parent"))
        let child = try await app.add(Post(text: "child", after: [parent]))
        await app.dispatcher.flush()
        let why = try await app.dispatcher.explain(child)
        #expect(why.remedy == .retryParent(parent))
        #expect(why.description.contains("retry \(parent)"), "\(why)")
        try await app.dispatcher.retry(parent)
        try await app.pump { try await app.delivered(child) }
        #expect(try await app.dispatcher.explain(child).reason.name == "delivered")
    }
}
