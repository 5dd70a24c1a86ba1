import Metrics

/// The dispatcher's counters and timers (swift-metrics; no-ops until the app
/// bootstraps a metrics backend).
struct DispatcherMetrics: Sendable {
    let enqueued = Counter(label: "outbox_enqueued_total")
    let delivered = Counter(label: "outbox_delivered_total")
    let waitingToRetry = Counter(label: "outbox_waiting_to_retry_total")
    let quarantined = Counter(label: "outbox_quarantined_total")
    let conflicts = Counter(label: "outbox_conflicts_total")
    /// Attempts whose answer was lost after the request was sent (resent promptly).
    let interrupted = Counter(label: "outbox_interrupted_total")
    /// Attempts that never reached the server (refused, DNS, unreachable).
    let notSent = Counter(label: "outbox_not_sent_total")
    /// Deliveries answered from the server's idempotency record (also in `delivered`).
    let replayed = Counter(label: "outbox_replayed_total")
    let deliveryTime = Metrics.Timer(label: "outbox_delivery_duration")
    /// 1 while the queue is stalled (``OutboxDispatcherConfiguration/stallThreshold``), else 0.
    let stalled = Gauge(label: "outbox_stalled")
}
