import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxHTTP
import OutboxReferenceServer
import Testing

/// `drain(until:)` for background tasks returns before
/// its deadline, is cancellation-safe, leaves nothing in flight; `stop()`
/// returns promptly even while a handler ignores cancellation.
@Suite("Background delivery", .timeLimit(.minutes(5)))
struct BackgroundDeliveryTests {
    /// A handler that never answers "slow" until its task is cancelled.
    static func hangingServer() -> ScriptedServer { ScriptedServer() }

    /// Says when the handler has begun the slow delivery.
    final class Started: Sendable {
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream<Void>.makeStream() }

        /// Returns once the slow delivery is in the handler: an attempt is
        /// running, not only claimed. (Cancelled between the claim and the
        /// handler, a drain gives the entry back as not sent, due at once,
        /// and a dispatcher never stopped sends it again.)
        func wait() async {
            var iterator = stream.makeAsyncIterator()
            _ = await iterator.next()
        }
    }

    static func hangingHandler(_ server: ScriptedServer, started: Started? = nil) -> ClosureOutboxHandler {
        ClosureOutboxHandler { delivery in
            // Not a wait: it never ends before its task is cancelled, which
            // is what the tests do (CLITestSupport's suspendUntilCancelled
            // says so better, but this public-API-only target does not
            // depend on it).
            if delivery.text == "slow" {
                started?.continuation.yield()
                try await Task.sleep(for: .seconds(24 * 3600))
            }
            return await server.deliver(delivery)
        }
    }

    /// Waits, through the entry's own updates, until it is being sent.
    static func waitUntilSending(_ dispatcher: OutboxDispatcher, _ id: OutboxEntry.ID) async throws {
        for try await state in dispatcher.updates(of: id) where state.status == .inFlight { return }
    }

    @Test("drain(until:) interrupts what still runs at its margin and returns before the deadline, nothing in flight")
    func returnsBeforeTheDeadline() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let clock = ManualOutboxClock()
        let server = ScriptedServer()
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        configuration.unavailableStatuses = []
        let started = Started()
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [Post.type: Self.hangingHandler(server, started: started)], configuration: configuration,
            clock: clock)
        let fast = try await store.enqueue(OutboxEnqueueRequest(Post(text: "fast", topic: "a"))).id
        let slow = try await store.enqueue(OutboxEnqueueRequest(Post(text: "slow", topic: "b"))).id
        let deadline = clock.now().addingTimeInterval(30)
        let drain = Task { await dispatcher.drain(until: deadline) }
        await started.wait()
        #expect(try await dispatcher.waitUntilDelivered(fast) == nil)
        clock.set(to: deadline.addingTimeInterval(-1))  // the default margin: the cutoff
        let report = await drain.value
        #expect(clock.now() < deadline)
        #expect(report.delivered == 1)
        #expect(report.interrupted == 1)
        #expect(try await store.summary().count(.inFlight) == 0)
        let left = try #require(try await store.entry(slow))
        #expect(left.status == .waitingToRetry)
        #expect(left.outcomeUnknownSince != nil)  // it may have reached the server: resent with the same key
    }

    @Test("cancelling drain(until:) — a background task's expiration — records the running attempts before it returns")
    func cancellationLeavesNothingLeased() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let server = ScriptedServer()
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        let started = Started()
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [Post.type: Self.hangingHandler(server, started: started)], configuration: configuration,
            clock: ManualOutboxClock())
        let slow = try await store.enqueue(OutboxEnqueueRequest(Post(text: "slow"))).id
        let drain = Task { await dispatcher.drain(until: Date.distantFuture) }
        await started.wait()
        drain.cancel()
        let report = await drain.value
        #expect(report.interrupted == 1)
        #expect(try await store.summary().count(.inFlight) == 0)
        #expect(try await store.entry(slow)?.status == .waitingToRetry)
    }

    @Test("stop() returns promptly while a handler ignores cancellation; a drain(until:) waiting for a retry ends too")
    func stopIsPrompt() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let stuck = Stuck()
        let handler = ClosureOutboxHandler { delivery in
            if String(decoding: delivery.payload, as: UTF8.self) == "stuck" { await stuck.wait() }  // ignores cancellation
            return .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: .seconds(3600))
        }
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [Post.type: handler], configuration: configuration, clock: ManualOutboxClock())
        _ = try await store.enqueue(OutboxEnqueueRequest(Post(text: "later", topic: "a")))
        let id = try await store.enqueue(OutboxEnqueueRequest(Post(text: "stuck", topic: "b"))).id
        let drain = Task { await dispatcher.drain(until: Date.distantFuture) }
        try await Self.waitUntilSending(dispatcher, id)
        await dispatcher.stop()
        #expect(try await store.summary().count(.inFlight) == 0)
        _ = await drain.value
        await stuck.release()
    }

    @Test("a background drain against the reference server with faults: every write applied once, nothing in flight after")
    func againstTheReferenceServer() async throws {
        var faults = ServerFaults.mixed(rate: 0.3, seed: 17)
        faults.halfOpen = 0  // held connections would only stretch the run
        faults.halfOpenHold = .seconds(2)
        let server = try await ReferenceServer.start(faults: faults, keyStore: InMemoryIdempotencyKeyStore())
        defer { Task { await server.stop() } }
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        var http = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
        http.requestTimeout = .seconds(1)
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        configuration.backoff = OutboxBackoff(base: .milliseconds(20), cap: .milliseconds(200))
        configuration.retryAfterFloor = .milliseconds(50)
        configuration.retryAfterCap = .milliseconds(200)
        configuration.deliveryTimeout = .seconds(3)
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: configuration)
        var keys: [String] = []
        for index in 0..<30 {
            let result = try await store.enqueue(OutboxEnqueueRequest(
                type: "message", method: "POST", endpoint: "/messages",
                payload: Array(#"{"conversation":"c\#(index % 3)","text":"m\#(index)"}"#.utf8),
                headers: ["Content-Type": "application/json"], scope: "c\(index % 3)"))
            if case .enqueued(let entry) = result { keys.append(entry.idempotencyKey) }
        }
        let report = await dispatcher.drain(until: Date().addingTimeInterval(120))
        let summary = try await store.summary()
        #expect(summary.count(.inFlight) == 0)
        #expect(report.delivered + summary.unsent + summary.needsAttention == 30)
        let ledger = server.ledger
        #expect(keys.allSatisfy { (ledger.applied[$0] ?? 0) <= 1 })  // never applied twice
        #expect(ledger.applied.count >= report.delivered)
        await dispatcher.stop()
    }
}

/// A handler's wait that ignores cancellation, released by the test.
actor Stuck {
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var released = false
    func wait() async {
        if released { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func release() {
        released = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
