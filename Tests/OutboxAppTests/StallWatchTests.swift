import Foundation
import MetricsTestKit
import Outbox
import Testing

/// The stall watch: a queue holding unsent writes that moves none of them
/// for the threshold is reported once, with why its oldest write waits; on
/// a manual clock, waiting on the events themselves.
@Suite("Stall watch", .timeLimit(.minutes(5)))
struct StallWatchTests {
    private static func app(threshold: Duration?) -> App {
        App { $0.stallThreshold = threshold }
    }

    /// The next `.stalled` event, skipping others.
    private static func nextStall(_ events: inout AsyncStream<OutboxEvent>.Iterator) async -> OutboxStall? {
        while let event = await events.next() {
            if case .stalled(let stall) = event { return stall }
        }
        return nil
    }

    /// Waits until the dispatcher's timer sleeps on the manual clock.
    private static func timerArmed(_ app: App) async {
        while app.clock.sleeperCount == 0 && !Task.isCancelled { await Task.yield() }
    }

    @Test("offline past the threshold: one stalled event naming offline and the gauge at 1; moving again sets it to 0, and a new stall is reported")
    func offlineStall() async throws {
        let metrics = TestMetrics()
        let app = App {
            $0.stallThreshold = .seconds(600)
            $0.metricsFactory = metrics
        }
        var events = app.dispatcher.events().makeAsyncIterator()
        await app.dispatcher.connectivityChanged(isOnline: false)
        let start = app.clock.now()
        let first = try await app.dispatcher.enqueue(Post(text: "offline")).id
        await app.dispatcher.flush()
        await Self.timerArmed(app)
        #expect(app.clock.nextDeadline == start.addingTimeInterval(600))
        app.clock.advance(by: .seconds(600))
        let stall = try #require(await Self.nextStall(&events))
        #expect(stall.oldest.id == first)
        #expect(stall.oldest.reason == .offline)
        #expect(stall.oldest.remedy == .goOnline)
        #expect(stall.unsent == 1)
        #expect(stall.since == start)
        #expect(try metrics.expectGauge("outbox_stalled").lastValue == 1)
        // Reported once: no timer is left for this stall.
        await app.dispatcher.flush()
        #expect(app.clock.sleeperCount == 0)

        await app.dispatcher.connectivityChanged(isOnline: true)
        try await app.pump { try await app.delivered(first) }
        #expect(try metrics.expectGauge("outbox_stalled").lastValue == 0)
        await app.dispatcher.connectivityChanged(isOnline: false)
        let second = try await app.dispatcher.enqueue(Post(text: "offline again")).id
        await app.dispatcher.flush()
        await Self.timerArmed(app)
        app.clock.advance(by: .seconds(600))
        let again = try #require(await Self.nextStall(&events))
        #expect(again.oldest.id == second)
        await app.dispatcher.stop()
        #expect(await Self.nextStall(&events) == nil)  // the stream ended with no third stall
    }

    @Test("a Retry-After longer than the threshold is a stall, reported with the time the write waits for")
    func longRetryAfter() async throws {
        let app = Self.app(threshold: .seconds(600))
        await app.server.failFirstDelivery(retryAfter: .seconds(1800), thenDeliverAs: "srv-1")
        var events = app.dispatcher.events().makeAsyncIterator()
        let id = try await app.dispatcher.enqueue(Post(text: "busy")).id
        await app.dispatcher.flush()
        // The timer's deadline is set when the drain ends: a timer that starts
        // sleeping after the clock moved past it fires at once.
        app.clock.advance(by: .seconds(600))
        let stall = try #require(await Self.nextStall(&events))
        #expect(stall.oldest.id == id)
        guard case .retryAt(let date) = stall.oldest.reason else {
            Issue.record("expected retryAt, got \(stall.oldest.reason)")
            return
        }
        #expect(date == stall.since.addingTimeInterval(1800))
        #expect(stall.oldest.lastFailure?.httpStatus == 500)
        await app.dispatcher.stop()
    }

    @Test("with the watch off, nothing is reported and no timer waits for it")
    func watchOff() async throws {
        let app = Self.app(threshold: nil)
        let events = app.dispatcher.events()
        await app.dispatcher.connectivityChanged(isOnline: false)
        _ = try await app.dispatcher.enqueue(Post(text: "offline"))
        await app.dispatcher.flush()
        #expect(app.clock.sleeperCount == 0)
        app.clock.advance(by: .seconds(24 * 3600))
        await app.dispatcher.flush()
        await app.dispatcher.stop()
        for await event in events {
            if case .stalled = event { Issue.record("reported a stall with the watch off: \(event)") }
        }
    }

    @Test("a threshold of zero or beyond 100 years is refused")
    func invalidThresholds() {
        for threshold: Duration in [.zero, .seconds(-1), .seconds(200 * 365 * 86_400)] {
            var configuration = OutboxDispatcherConfiguration()
            configuration.stallThreshold = threshold
            #expect(throws: OutboxError.self) { try configuration.validate() }
        }
    }
}
