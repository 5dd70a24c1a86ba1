import CLITestSupport
import Foundation
import Outbox
import OutboxLocking
import OutboxLogTesting
import Testing

/// The dispatcher's promises that are easy to break quietly: the concurrency
/// limit, the backoff cap, conflict policies on remapped entries, and never
/// sending one entry twice at once, even past a watchdog timeout.
@Suite("Dispatcher contract", .timeLimit(.minutes(5)))
struct DispatcherContractTests {
    @Test("at most maximumConcurrentDeliveries run at once, and different scopes run side by side")
    func concurrencyLimit() async throws {
        let gate = Gate()
        let handler = ScriptedHandler(onDeliver: { _ in await gate.pass() })
        let fixture = DispatcherFixture(handler: handler) { $0.maximumConcurrentDeliveries = 3 }
        for i in 0..<12 { try await fixture.add("n\(i)", scope: "scope-\(i % 6)") }
        let flush = Task { await fixture.dispatcher.flush() }
        // Three deliveries from three scopes start before any of them ends.
        await gate.waitForArrivals(3)
        #expect(Set(fixture.handler.deliveries.compactMap(\.entry.scope)).count == 3)
        gate.open()
        let report = await flush.value
        #expect(report.delivered == 12)
        #expect(gate.maximumInside == 3)
    }

    @Test("the backoff never exceeds its cap, however many attempts failed")
    func backoffCap() {
        var random = SplitMix64(seed: TestSeed.take())
        let backoff = OutboxBackoff()
        #expect(backoff.base == .seconds(1) && backoff.cap == .seconds(300))
        var longest = Duration.zero
        for attempt in [1, 5, 9, 10, 20, 63, 64, 1_000, Int.max] {
            for _ in 0..<200 {
                let delay = backoff.delay(afterAttempt: attempt, using: &random)
                #expect(delay >= .zero && delay <= .seconds(300), "attempt \(attempt): \(delay)")
                longest = max(longest, delay)
            }
        }
        #expect(longest > .seconds(150))  // the cap is reached, not just respected
        #expect(OutboxBackoff(base: .milliseconds(100), cap: .seconds(2)).delay(afterAttempt: 1, using: &random) <= .milliseconds(100))
    }

    @Test("server wins: the discarded entry's dependents are quarantined, reported and counted")
    func serverWinsCascade() async throws {
        let fixture = DispatcherFixture(handler: ScriptedHandler(conflictPolicy: .serverWins))
        fixture.handler.script("album", .conflict(reason: "exists", httpStatus: 409))
        let album = try await fixture.add("album")
        let photo = try await fixture.add("photo", dependencies: [album])
        let report = await fixture.dispatcher.flush()
        #expect(report.discarded == 1)
        #expect(report.quarantined == 1)
        #expect(try await fixture.store.status(photo) == .quarantined)
        await fixture.events.wait { $0.contains { if case .quarantined(photo, let failure) = $0 { failure.cause == .dependency(.discarded(album)) } else { false } } }
    }

    @Test("client wins resends what was sent, with local: ids already replaced")
    func clientWinsResendIsRemapped() async throws {
        let resent = Locked<[OutboxDelivery]>([])
        let handler = ClosureOutboxHandler(conflictPolicy: .clientWins) { delivery in
            delivery.endpoint.hasPrefix("/albums/") ? .conflict(reason: "stale", httpStatus: 409) : .delivered(serverID: "a-9")
        } resend: { delivery in
            resent.withLock { $0.append(delivery) }
            return .delivered(serverID: nil)
        }
        let store = InMemoryOutboxStore(partition: "u", configuration: quietConfiguration())
        let dispatcher = OutboxDispatcher(store: store, handlers: ["post": handler])
        let album = try await store.add(request(endpoint: "/albums"))
        let photo = try await store.add(
            request(endpoint: "/albums/\(album.localReference)/photos", payload: #"{"album":"\#(album.localReference)"}"#,
                    dependencies: [album]))
        await dispatcher.flush()
        let resend = try #require(resent.withLock { $0.first })
        #expect(resend.id == photo)
        #expect(resend.endpoint == "/albums/a-9/photos")
        #expect(String(decoding: resend.payload, as: UTF8.self) == #"{"album":"a-9"}"#)
        #expect(try await store.completion(of: photo) != nil)
    }

    @Test("a handler that ignores cancellation past its timeout is never overlapped by the entry's next attempt")
    func noOverlapAfterTimeout() async throws {
        let gate = Gate()  // stays shut: the first call hangs, ignoring cancellation
        let calls = Locked(0)
        let handler = ScriptedHandler(onDeliver: { _ in
            if calls.withLock({ $0 += 1; return $0 }) == 1 { await gate.pass() }
        })
        let fixture = DispatcherFixture(handler: handler) {
            $0.deliveryTimeout = .seconds(30)
            $0.backoff = OutboxBackoff(base: .seconds(1), cap: .seconds(1))
        }
        let id = try await fixture.add("stubborn")
        let first = Task { await fixture.dispatcher.flush() }
        await gate.waitForArrivals(1)
        try await yielding(until: fixture.clock.sleeperCount > 0)
        fixture.clock.advance(by: .seconds(31))  // the watchdog gives up on it
        #expect(await first.value.interrupted == 1)

        // The retry comes due (its timer fires a flush) while the first
        // handler still runs: the attempt waits for it instead of sending.
        fixture.clock.advance(by: .seconds(2))
        let second = Task { await fixture.dispatcher.flush() }
        try await yielding(until: fixture.clock.sleeperCount > 0 || calls.withLock { $0 } > 1)
        fixture.clock.advance(by: .seconds(31))
        _ = await second.value
        #expect(calls.withLock { $0 } == 1)
        #expect(try await fixture.store.entry(id)?.lastFailure?.message?.contains("still running") == true)
        #expect(fixture.events.count { $0.deliveredID == id } == 0)

        // Once it ends, the next attempt goes out.
        gate.open()
        fixture.clock.advance(by: .seconds(2))
        await fixture.events.wait { $0.contains { $0.deliveredID == id } }
        #expect(calls.withLock { $0 } >= 2)
    }
}

/// Yields until `condition` holds: for state that changes on other tasks
/// without an event to await. Fails (instead of hanging) if it never does.
func yielding(
    until condition: @autoclosure () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    for _ in 0..<200_000 {
        if condition() { return }
        await Task.yield()
    }
    try #require(condition(), "the condition never came true", sourceLocation: sourceLocation)
}

/// Holds deliveries until opened (ignoring cancellation, like a stubborn
/// handler), and counts how many are inside at once.
final class Gate: Sendable {
    private struct State {
        var open = false
        var inside = 0
        var maximumInside = 0
        var arrivals = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var arrivalWatchers: [(Int, CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    var maximumInside: Int { state.withLock { $0.maximumInside } }

    func pass() async {
        let watchers = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.inside += 1
            state.arrivals += 1
            state.maximumInside = max(state.maximumInside, state.inside)
            let (ready, rest) = (state.arrivalWatchers.filter { $0.0 <= state.arrivals }, state.arrivalWatchers.filter { $0.0 > state.arrivals })
            state.arrivalWatchers = rest
            return ready.map(\.1)
        }
        for watcher in watchers { watcher.resume() }
        await withCheckedContinuation { continuation in
            let go = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiting.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
        state.withLock { $0.inside -= 1 }
    }

    func waitForArrivals(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.arrivals >= count { return true }
                state.arrivalWatchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
