import Outbox
import Testing

/// What a dispatcher leaves behind when it goes away.
@Suite("Dispatcher lifetime", .timeLimit(.minutes(5)))
struct DispatcherLifetimeTests {
    /// Found by LeakSanitizer (Scripts/sanitize.sh): a dispatcher released
    /// without `stop()` left its retry timer asleep on the clock — on a
    /// manual clock forever, the sleeping task and the clock holding each
    /// other (a leak at exit); on the system clock until the retry time.
    @Test("a dispatcher released without stop() cancels its retry timer: nothing is left asleep on the clock")
    func releasedDispatcherCancelsItsTimer() async throws {
        let clock = ManualOutboxClock()
        let store = InMemoryOutboxStore(partition: "u", configuration: quietConfiguration())
        let handler = ScriptedHandler()
        handler.script("later", .transient(reason: "503", httpStatus: 503, retryAfter: .seconds(60)))
        try await store.enqueue(
            OutboxEnqueueRequest(type: Note.type, method: "POST", endpoint: "/notes", payload: Array("later".utf8), createdAt: clock.now()))
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        var dispatcher: OutboxDispatcher? = OutboxDispatcher(
            store: store, handlers: [Note.type: handler], configuration: configuration, clock: clock)
        #expect(await dispatcher?.flush().waitingToRetry == 1)
        // The retry is 60 s away: the timer sleeps until then.
        while clock.sleeperCount == 0 && !Task.isCancelled { await Task.yield() }
        dispatcher = nil
        while clock.sleeperCount > 0 && !Task.isCancelled { await Task.yield() }  // ends at the time limit if the timer stays
        #expect(clock.sleeperCount == 0)
        #expect(handler.deliveries.count == 1)
    }

    @Test("a dispatcher writing snapshots released without stop() ends its snapshot tasks: nothing is left asleep on the clock")
    func releasedDispatcherEndsItsSnapshots() async throws {
        let clock = ManualOutboxClock()
        let store = InMemoryOutboxStore(partition: "u", configuration: quietConfiguration())
        var configuration = OutboxDispatcherConfiguration()
        configuration.snapshotInterval = .seconds(1)
        configuration.stallThreshold = nil
        var dispatcher: OutboxDispatcher? = OutboxDispatcher(
            store: store, handlers: [Note.type: ScriptedHandler()], configuration: configuration, clock: clock)
        await dispatcher?.start()
        // The snapshot ticker sleeps until its next interval.
        while clock.sleeperCount == 0 && !Task.isCancelled { await Task.yield() }
        dispatcher = nil
        while clock.sleeperCount > 0 && !Task.isCancelled { await Task.yield() }  // ends at the time limit if the ticker stays
        #expect(clock.sleeperCount == 0)
    }
}
