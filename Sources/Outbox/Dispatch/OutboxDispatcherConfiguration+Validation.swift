import OutboxModel
extension OutboxDispatcherConfiguration {
    /// Throws ``/OutboxModel/OutboxError/Code/invalidArgument`` naming the first value out
    /// of range: no concurrency, a negative (or longer than 100 years)
    /// duration, a maximum age, delivery timeout or stall threshold of zero.
    ///
    /// ``OutboxDispatcher`` checks its configuration when it is created; if
    /// this throws, the dispatcher refuses to work — `enqueue` throws the
    /// error and every `flush` reports it — instead of misbehaving.
    public func validate() throws(OutboxError) {
        func reject(_ message: String) -> OutboxError {
            OutboxError(.invalidArgument, "OutboxDispatcherConfiguration.\(message)")
        }
        guard maximumConcurrentDeliveries >= 1 else {
            throw reject("maximumConcurrentDeliveries is \(maximumConcurrentDeliveries); it must be at least 1")
        }
        func duration(_ value: Duration, _ name: String, positive: Bool = false) throws(OutboxError) {
            let lower: Duration = .zero
            guard value >= lower, value <= OutboxLimits.maximumDuration, !positive || value > .zero else {
                throw reject(
                    "\(name) is \(value); it must be \(positive ? "more than 0" : "at least 0") and at most \(OutboxLimits.maximumDuration)")
            }
        }
        try duration(backoff.base, "backoff.base")
        try duration(backoff.cap, "backoff.cap")
        if let maximumAge { try duration(maximumAge, "maximumAge", positive: true) }
        try duration(deliveryTimeout, "deliveryTimeout", positive: true)
        try duration(leaseGrace, "leaseGrace")
        try duration(deadlineMargin, "deadlineMargin")
        if let quarantineRetention { try duration(quarantineRetention, "quarantineRetention") }
        try duration(pruneInterval, "pruneInterval")
        if let stallThreshold { try duration(stallThreshold, "stallThreshold", positive: true) }
        if let snapshotInterval { try duration(snapshotInterval, "snapshotInterval", positive: true) }
        // The lease (timeout + grace) must itself be a duration the store accepts.
        try duration(deliveryTimeout + leaseGrace, "deliveryTimeout + leaseGrace")
    }
}
