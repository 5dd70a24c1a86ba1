import Hummingbird

/// How long the reference server takes to answer: a round trip over a real
/// network (a phone's is 50–300 ms), so a drain against it shows what its
/// concurrency is worth. Each request waits `base` plus a uniform draw in
/// `-jitter...jitter` (never below zero) before it is handled.
public struct ServerLatency: Sendable, Hashable {
    public var base: Duration
    public var jitter: Duration

    public init(base: Duration, jitter: Duration = .zero) {
        self.base = base
        self.jitter = jitter
    }

    /// One request's delay.
    func draw() -> Duration {
        guard jitter > .zero else { return base }
        let spread = Double(jitter.components.seconds) + Double(jitter.components.attoseconds) / 1e18
        let delay = base + .seconds(Double.random(in: -spread...spread))
        return max(.zero, delay)
    }
}

/// Outermost but for the activity count: delays every request by the
/// configured ``ServerLatency`` before anything else sees it, without
/// holding a thread (the wait is a task sleep).
struct LatencyMiddleware: RouterMiddleware {
    typealias Context = ReferenceContext
    let latency: ServerLatency

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let delay = latency.draw()
        if delay > .zero { try await Task.sleep(for: delay) }
        return try await next(request, context)
    }
}
