import Foundation
import MetricsTestKit
import Outbox
import Testing

/// The dispatcher's swift-metrics, through a factory of its own
/// (`OutboxDispatcherConfiguration.metricsFactory`): each outcome counted
/// once, each delivery timed. Other dispatchers in the process, with the
/// global factory, count elsewhere.
@Suite("Dispatcher metrics", .timeLimit(.minutes(5)))
struct DispatcherMetricsTests {
    @Test("enqueues, deliveries and retries are counted, and each delivery is timed")
    func countsAndTimes() async throws {
        let metrics = TestMetrics()
        let app = App { $0.metricsFactory = metrics }
        await app.server.failFirstDelivery(retryAfter: .seconds(5), thenDeliverAs: "srv-1")
        let first = try await app.dispatcher.enqueue(Post(text: "first")).id
        let second = try await app.dispatcher.enqueue(Post(text: "second")).id
        try await app.pump {
            let firstDelivered = try await app.delivered(first)
            let secondDelivered = try await app.delivered(second)
            return firstDelivered && secondDelivered
        }
        #expect(try metrics.expectCounter("outbox_enqueued_total").totalValue == 2)
        #expect(try metrics.expectCounter("outbox_delivered_total").totalValue == 2)
        // Each write's first attempt is answered with a retry.
        #expect(try metrics.expectCounter("outbox_waiting_to_retry_total").totalValue == 2)
        #expect(try metrics.expectCounter("outbox_quarantined_total").totalValue == 0)
        // Four attempts: two answered with a retry, two delivered.
        #expect(try metrics.expectTimer("outbox_delivery_duration").values.count == 4)
        await app.dispatcher.stop()
    }
}
