import Metrics

/// The dispatcher's counters and timers (swift-metrics; no-ops until the app
/// bootstraps a metrics backend, or gives the dispatcher a factory of its
/// own: ``OutboxDispatcherConfiguration/metricsFactory``).
struct DispatcherMetrics: Sendable {
    let enqueued: Counter
    let delivered: Counter
    let waitingToRetry: Counter
    let quarantined: Counter
    let conflicts: Counter
    /// Attempts whose answer was lost after the request was sent (resent promptly).
    let interrupted: Counter
    /// Attempts that never reached the server (refused, DNS, unreachable).
    let notSent: Counter
    /// Deliveries answered from the server's idempotency record (also in `delivered`).
    let replayed: Counter
    /// How long each delivery's handler took.
    let deliveryTime: Metrics.Timer
    /// 1 while the queue is stalled (``OutboxDispatcherConfiguration/stallThreshold``), else 0.
    let stalled: Gauge

    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        enqueued = Counter(label: "outbox_enqueued_total", factory: factory)
        delivered = Counter(label: "outbox_delivered_total", factory: factory)
        waitingToRetry = Counter(label: "outbox_waiting_to_retry_total", factory: factory)
        quarantined = Counter(label: "outbox_quarantined_total", factory: factory)
        conflicts = Counter(label: "outbox_conflicts_total", factory: factory)
        interrupted = Counter(label: "outbox_interrupted_total", factory: factory)
        notSent = Counter(label: "outbox_not_sent_total", factory: factory)
        replayed = Counter(label: "outbox_replayed_total", factory: factory)
        deliveryTime = Metrics.Timer(label: "outbox_delivery_duration", factory: factory)
        stalled = Gauge(label: "outbox_stalled", factory: factory)
    }
}
