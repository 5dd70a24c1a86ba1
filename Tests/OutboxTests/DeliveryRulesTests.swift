import CLITestSupport
import Foundation
import Logging
import Outbox
import OutboxLocking
import Testing

/// The dispatcher's rules for how an attempt ends and when the next one
/// starts, so that no entry is lost, stuck or resent without end:
/// Retry-After bounds, in-progress polls, interrupted and not-sent
/// attempts, slots that never idle, leases that never stick, cancellation,
/// deadlines and the lifecycle. Manual clock: nothing sleeps.
@Suite("Delivery rules", .timeLimit(.minutes(5)))
struct DeliveryRulesTests {
    @Test("Retry-After is clamped: 0 waits the floor, a huge one waits the cap and does not expire the entry")
    func retryAfterIsClamped() async throws {
        let fixture = DispatcherFixture { $0.maximumAge = .seconds(7 * 24 * 3600) }
        fixture.handler.script("zero", .transient(reason: "503", httpStatus: 503, retryAfter: .zero))
        fixture.handler.script("huge", .transient(reason: "503", httpStatus: 503, retryAfter: .seconds(30 * 24 * 3600)))
        let zero = try await fixture.add("zero", maxAttempts: 3)
        let huge = try await fixture.add("huge")
        let start = fixture.clock.now()
        await fixture.dispatcher.flush()
        // Not re-claimed at once: one attempt, due after the 1 s floor.
        #expect(fixture.handler.deliveries(of: zero).count == 1)
        #expect(try await fixture.store.entry(zero)?.nextAttemptAt == start.addingTimeInterval(1))
        #expect(try await fixture.store.status(zero) == .waitingToRetry)
        // Capped at an hour, and still alive (not "expired").
        #expect(try await fixture.store.entry(huge)?.nextAttemptAt == start.addingTimeInterval(3600))
        #expect(try await fixture.store.status(huge) == .waitingToRetry)
    }

    @Test("in-progress polls do not use up attempts: a slow server never gets the entry quarantined")
    func inProgressIsNotAFailedAttempt() async throws {
        let fixture = DispatcherFixture()
        let polls = (0..<12).map { _ in OutboxOutcome.inProgress(reason: "409 in progress", retryAfter: .seconds(1)) }
        fixture.handler.script("slow", polls[0], polls[1], polls[2], polls[3], polls[4], polls[5], .delivered(serverID: "s"))
        let id = try await fixture.add("slow", maxAttempts: 2)
        for _ in 0..<7 {
            await fixture.dispatcher.flush()
            fixture.clock.advance(by: .seconds(1))
        }
        await fixture.events.wait { $0.contains { $0.deliveredID == id } }
        #expect(fixture.handler.deliveries(of: id).count == 7)
        #expect(try await fixture.store.completion(of: id)?.serverID == "s")
    }

    @Test("an interrupted attempt is resent within the short bounded delay, not counted, and reported apart")
    func interruptedIsResentPromptly() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script(
            "dropped", .interrupted(reason: "connection lost after the request was sent"),
            .interrupted(reason: "connection lost after the request was sent"), .delivered(serverID: "d"))
        let id = try await fixture.add("dropped", maxAttempts: 1)
        let start = fixture.clock.now()
        let first = await fixture.dispatcher.flush()
        #expect(first.interrupted == 1)
        #expect(first.waitingToRetry == 0)
        let entry = try #require(try await fixture.store.entry(id))
        #expect(entry.status == .waitingToRetry)
        #expect(entry.attempts == 0)  // given back: maxAttempts 1 is not used up
        #expect(entry.nextAttemptAt <= start.addingTimeInterval(0.25))
        fixture.clock.advance(by: .seconds(5))  // the cap of the interrupted backoff
        await fixture.dispatcher.flush()
        fixture.clock.advance(by: .seconds(5))
        await fixture.events.wait { $0.contains { $0.deliveredID == id } }
        #expect(fixture.events.count { if case .interrupted(id, _, _) = $0 { true } else { false } } == 2)
    }

    @Test("a busy slot does not idle the others: an entry enqueued while one attempt hangs is sent at once")
    func enqueueWakesTheRunningDrain() async throws {
        let handler = ScriptedHandler(onDeliver: { delivery in
            if String(decoding: delivery.entry.payload, as: UTF8.self) == "hangs" { try await suspendUntilCancelled() }
        })
        let fixture = DispatcherFixture(handler: handler) { $0.maximumConcurrentDeliveries = 2 }
        let hanging = try await fixture.add("hangs")
        let flush = Task { await fixture.dispatcher.flush() }
        await fixture.events.wait { $0.contains(.sending(hanging, attempt: 1)) }
        let late = try await fixture.dispatcher.enqueue(OutboxEnqueueRequest(
            type: Note.type, method: "POST", endpoint: "/notes", payload: Array("late".utf8), createdAt: fixture.clock.now())).id
        await fixture.events.wait { $0.contains { $0.deliveredID == late } }
        #expect(try await fixture.store.status(hanging) == .inFlight)  // still hanging meanwhile
        await fixture.dispatcher.stop()
        _ = await flush.value
    }

    @Test("a retry that comes due while another attempt hangs is sent without waiting for it")
    func dueRetryWakesTheRunningDrain() async throws {
        let handler = ScriptedHandler(onDeliver: { delivery in
            if String(decoding: delivery.entry.payload, as: UTF8.self) == "hangs" { try await suspendUntilCancelled() }
        })
        let fixture = DispatcherFixture(handler: handler) {
            $0.maximumConcurrentDeliveries = 2
            $0.deliveryTimeout = .seconds(600)
        }
        fixture.handler.script("flaky", .transient(reason: "503", httpStatus: 503, retryAfter: .seconds(5)), .delivered(serverID: "f"))
        let flaky = try await fixture.add("flaky")
        let hanging = try await fixture.add("hangs")
        let flush = Task { await fixture.dispatcher.flush() }
        await fixture.events.wait { events in events.contains(.sending(hanging, attempt: 1)) && events.contains { $0.isWaitingToRetry } }
        fixture.clock.advance(by: .seconds(5))
        await fixture.events.wait { $0.contains { $0.deliveredID == flaky } }
        #expect(try await fixture.store.status(hanging) == .inFlight)
        await fixture.dispatcher.stop()
        _ = await flush.value
    }

    @Test("a server id longer than a store keeps: the entry is recorded delivered without it, once, not resent forever")
    func oversizeServerID() async throws {
        let fixture = DispatcherFixture()
        let huge = String(repeating: "x", count: OutboxLimits.maximumServerIDBytes + 1)
        fixture.handler.script("big", .delivered(serverID: huge))
        let id = try await fixture.add("big")
        let report = await fixture.dispatcher.flush()
        #expect(report.delivered == 1, "\(report)")
        #expect(fixture.handler.deliveries(of: id).count == 1)
        let status = try await fixture.store.status(id)
        #expect(status != .pending && status != .waitingToRetry, "\(String(describing: status))")
        #expect(try await fixture.store.completion(of: id)?.serverID == nil)
    }

    @Test("an attempt never sent whose outcome cannot be recorded goes back as not sent: nothing marks its outcome unknown")
    func unrecordedUnsentAttemptIsNotUnknown() async throws {
        let store = InterceptingStore(base: InMemoryOutboxStore(partition: "u", configuration: quietConfiguration()))
        let handler = ScriptedHandler()
        handler.script("refused", .notSent(reason: "connection refused"))
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 1
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [Note.type: handler], configuration: configuration, clock: ManualOutboxClock())
        let id = try await store.add(OutboxEnqueueRequest(type: Note.type, method: "POST", endpoint: "/notes", payload: Array("refused".utf8)))
        store.failNextFailure()
        let report = await dispatcher.flush()
        #expect(report.errors.map(\.entry) == [id])
        let entry = try #require(try await store.entry(id))
        #expect(entry.status == .waitingToRetry)
        #expect(entry.lastFailure?.cause == .notSent, "\(entry.lastFailure.map(String.init(describing:)) ?? "none")")
        #expect(entry.outcomeUnknownSince == nil)
    }

    @Test("a store read failing while local: references are resolved ends the attempt; the entry is not left in flight")
    func readErrorDoesNotStickTheLease() async throws {
        let store = InterceptingStore(base: InMemoryOutboxStore(partition: "u", configuration: quietConfiguration()))
        let handler = ScriptedHandler()
        handler.script("parent", .delivered(serverID: "p-1"))
        let clock = ManualOutboxClock()
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 1
        let dispatcher = OutboxDispatcher(store: store, handlers: [Note.type: handler], configuration: configuration, clock: clock)
        let parent = try await store.add(OutboxEnqueueRequest(type: Note.type, method: "POST", endpoint: "/notes", payload: Array("parent".utf8)))
        await dispatcher.flush()
        let child = try await store.add(OutboxEnqueueRequest(
            type: Note.type, method: "POST", endpoint: "/notes/\(parent.localReference)", payload: Array("child".utf8),
            dependencies: [parent]))
        store.failNextCompletion()
        let report = await dispatcher.flush()
        #expect(report.notSent == 1)
        #expect(try await store.status(child) == .waitingToRetry)
        #expect(handler.deliveries(of: child).isEmpty)
        clock.advance(by: .seconds(2))
        await dispatcher.flush()
        #expect(handler.deliveries(of: child).map(\.endpoint) == ["/notes/p-1"])
    }

    @Test("leases that expire while the store stays open are reclaimed: the entry is sent again")
    func expiredLeasesAreReclaimed() async throws {
        let fixture = DispatcherFixture { $0.leaseGrace = .seconds(1) }
        let id = try await fixture.add("stuck")
        // An attempt that never records its outcome (as if its process lost it).
        _ = try await fixture.store.claimDue(at: fixture.clock.now(), limit: 1, lease: .seconds(5)) { _ in true }
        #expect(try await fixture.store.status(id) == .inFlight)
        await fixture.dispatcher.flush()
        #expect(fixture.handler.deliveries(of: id).isEmpty)  // the lease still runs
        fixture.clock.advance(by: .seconds(6))
        await fixture.dispatcher.flush()
        #expect(fixture.handler.deliveries(of: id).count == 1)
        #expect(try await fixture.store.entry(id) == nil)  // delivered
    }

    @Test("flush() returns when its task is cancelled, even while an attempt hangs")
    func flushHonoursCancellation() async throws {
        let handler = ScriptedHandler(onDeliver: { _ in try await suspendUntilCancelled() })
        let fixture = DispatcherFixture(handler: handler) { $0.deliveryTimeout = .seconds(600) }
        let id = try await fixture.add("hangs")
        let flush = Task { await fixture.dispatcher.flush() }
        await fixture.events.wait { $0.contains(.sending(id, attempt: 1)) }
        flush.cancel()
        _ = await flush.value  // returns although the handler still hangs
        #expect(try await fixture.store.status(id) == .inFlight)
        await fixture.dispatcher.stop()
    }

    @Test("stop() cancels running attempts; each is recorded as interrupted, none is left in flight")
    func stopCancelsAttempts() async throws {
        let cancelled = Locked(0)
        // A stop between `.sending` and the handler's call ends the attempt
        // as not sent (nothing went out), so the test stops only once both
        // handlers are running.
        let (handlerCalls, handlerCalled) = AsyncStream.makeStream(of: Void.self)
        let handler = ScriptedHandler(onDeliver: { _ in
            handlerCalled.yield()
            do { try await suspendUntilCancelled() } catch {
                cancelled.withLock { $0 += 1 }
                throw error
            }
        })
        let fixture = DispatcherFixture(handler: handler) {
            $0.deliveryTimeout = .seconds(600)
            $0.maximumConcurrentDeliveries = 2
        }
        let first = try await fixture.add("a")
        let second = try await fixture.add("b")
        let flush = Task { await fixture.dispatcher.flush() }
        await fixture.events.wait { $0.contains(.sending(first, attempt: 1)) && $0.contains(.sending(second, attempt: 1)) }
        var calls = handlerCalls.makeAsyncIterator()
        for _ in 0..<2 { _ = await calls.next() }
        await fixture.dispatcher.stop()
        #expect(cancelled.withLock { $0 } == 2)
        for id in [first, second] {
            let entry = try #require(try await fixture.store.entry(id))
            #expect(entry.status == .waitingToRetry)
            #expect(entry.attempts == 0)
            #expect(entry.lastFailure?.cause == .interrupted)
        }
        #expect(await flush.value.interrupted == 2)
    }

    @Test(
        "a retry that comes due between the drain's claim and its look at the next due date is sent while another attempt runs",
        .timeLimit(.minutes(5)))
    func retryDueDuringTheClaimIsNotLeftIdle() async throws {
        let store = InterceptingStore(base: InMemoryOutboxStore(partition: "u", configuration: quietConfiguration()))
        let handler = ScriptedHandler(onDeliver: { delivery in
            if String(decoding: delivery.entry.payload, as: UTF8.self) == "hangs" { try await suspendUntilCancelled() }
        })
        handler.script("flaky", .transient(reason: "503", httpStatus: 503, retryAfter: .seconds(1)), .delivered(serverID: "f-1"))
        let clock = ManualOutboxClock()
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 1
        configuration.maximumAge = nil
        configuration.deliveryTimeout = .seconds(600)
        let dispatcher = OutboxDispatcher(store: store, handlers: [Note.type: handler], configuration: configuration, clock: clock)
        let events = EventLog(dispatcher.events())
        func add(_ text: String) async throws -> OutboxEntry.ID {
            try await store.add(OutboxEnqueueRequest(
                type: Note.type, method: "POST", endpoint: "/notes", payload: Array(text.utf8), createdAt: clock.now()))
        }
        let hanging = try await add("hangs")
        let flaky = try await add("flaky")
        // Once the retry is recorded, the clock reaches it after the drain's
        // claim found nothing due and before the drain sets its alarm: the
        // window a real clock leaves between the two.
        let armed = Locked(true)
        store.afterNextDueDate { next in
            guard let next, next > clock.now(), armed.withLock({ $0 }) else { return }
            armed.withLock { $0 = false }
            clock.set(to: next)
        }
        let flush = Task { await dispatcher.flush() }
        // The hanging attempt holds its slot the whole time: only the alarm
        // for the retry can start the second attempt.
        await events.wait { $0.contains { $0.deliveredID == flaky } }
        #expect(handler.deliveries(of: flaky).count == 2)
        #expect(try await store.status(hanging) == .inFlight)
        await dispatcher.stop()
        _ = await flush.value
    }

    @Test("drain(until:) starts nothing after its deadline and returns within one delivery timeout of it, nothing in flight")
    func drainKeepsItsDeadline() async throws {
        // `.sending` is published before the handler is called (the attempt
        // first resolves references in the store), so the test counts the
        // handler's calls where they happen, not from the event.
        let (handlerCalls, handlerCalled) = AsyncStream.makeStream(of: Void.self)
        let handler = ScriptedHandler(onDeliver: { delivery in
            if String(decoding: delivery.entry.payload, as: UTF8.self) == "hangs" {
                handlerCalled.yield()
                try await suspendUntilCancelled()
            }
        })
        var calls = handlerCalls.makeAsyncIterator()
        let fixture = DispatcherFixture(handler: handler) { $0.deliveryTimeout = .seconds(30) }
        fixture.handler.script("later", .transient(reason: "503", httpStatus: 503, retryAfter: .seconds(120)))
        let hanging = try await fixture.add("hangs")
        let later = try await fixture.add("later")
        let deadline = fixture.clock.now().addingTimeInterval(60)
        let drain = Task { await fixture.dispatcher.drain(until: deadline) }
        await fixture.events.wait { $0.contains(.sending(hanging, attempt: 1)) && $0.contains { $0.isWaitingToRetry } }
        fixture.clock.advance(by: .seconds(30))  // the hanging attempt times out: interrupted, resent soon
        await fixture.events.wait { $0.contains { if case .interrupted(hanging, _, _) = $0 { true } else { false } } }
        fixture.clock.advance(by: .milliseconds(250))  // the interrupted backoff's first step, at most
        await fixture.events.wait { $0.filter { $0 == .sending(hanging, attempt: 1) }.count == 2 }
        for _ in 0..<2 { _ = await calls.next() }
        fixture.clock.set(to: deadline)  // nothing new starts; the running attempt may finish
        #expect(fixture.handler.deliveries(of: hanging).count == 2)
        fixture.clock.advance(by: .milliseconds(250))  // the second attempt's delivery timeout
        let report = await drain.value
        #expect(fixture.clock.now() <= deadline.addingTimeInterval(30))
        #expect(report.interrupted == 2)
        #expect(fixture.handler.deliveries(of: later).count == 1)  // its retry (at 120 s) is past the deadline
        #expect(try await fixture.store.entries(matching: OutboxFilter(statuses: [.inFlight])).isEmpty)
    }

    @Test("drain(until:) returns at once when what is left can only wait for a person, not at its deadline")
    func drainDoesNotWaitForNothing() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("parent", .alreadyProcessed(reason: "HTTP 410", httpStatus: 410))
        let parent = try await fixture.add("parent")
        let child = try await fixture.add("child", dependencies: [parent])
        // The manual clock never moves: waiting for the deadline would hang here.
        let report = await fixture.dispatcher.drain(until: fixture.clock.now().addingTimeInterval(3600))
        #expect(report.conflicts == 1)
        #expect(try await fixture.store.status(parent) == .conflict)
        #expect(try await fixture.store.status(child) == .pending)
    }

    @Test("lifecycle: enqueue after stop() is recorded and sent after the next start(); start() after stop() starts again")
    func restartAfterStop() async throws {
        let fixture = DispatcherFixture()
        await fixture.dispatcher.start()
        await fixture.dispatcher.stop()
        let id = try await fixture.dispatcher.enqueue(OutboxEnqueueRequest(
            type: Note.type, method: "POST", endpoint: "/notes", payload: Array("after stop".utf8), createdAt: fixture.clock.now())).id
        // Recorded (the commit point holds), not sent while stopped.
        #expect(await fixture.dispatcher.flush().delivered == 0)
        #expect(try await fixture.store.status(id) == .pending)
        let events = EventLog(fixture.dispatcher.events())
        await fixture.dispatcher.start()
        await events.wait { $0.contains { $0.deliveredID == id } }
        #expect(fixture.handler.deliveries(of: id).count == 1)
        await fixture.dispatcher.stop()
    }

    @Test("a quarantine warning names the method, the endpoint and the status")
    func quarantineWarningNamesTheRequest() async throws {
        let lines = LogCapture()
        let fixture = DispatcherFixture { $0.logger = lines.logger() }
        fixture.handler.script("nope", .permanent(reason: "HTTP 404: no such route", httpStatus: 404))
        _ = try await fixture.add("nope", endpoint: "/conversations/c1/messages")
        await fixture.dispatcher.flush()
        let warning = try #require(lines.messages.first { $0.contains("quarantined") })
        #expect(warning.contains("POST /conversations/c1/messages"))
        #expect(warning.contains("404"))
    }
}

/// Log lines a test can read.
final class LogCapture: Sendable {
    private let lines = Locked<[String]>([])
    var messages: [String] { lines.withLock { $0 } }

    func logger() -> Logger {
        Logger(label: "test", factory: { _ in Handler(capture: self) })
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { capture.lines.withLock { $0.append("\(event.level): \(event.message)") } }
    }
}

/// An in-memory store a test can step into: `completion(of:)` fails once
/// when told to (a read error in the middle of an attempt), and a hook runs
/// after `nextDueDate()` answers (time passing between the dispatcher's
/// claim and its next look at the queue).
final class InterceptingStore: ForwardingOutboxStore {
    let base: InMemoryOutboxStore
    private let failNext = Locked(false)
    private let failNextFailureRecord = Locked(false)
    private let afterNextDueDate = Locked<(@Sendable (Date?) -> Void)?>(nil)
    init(base: InMemoryOutboxStore) { self.base = base }
    var wrapped: any OutboxStore { base }
    func failNextCompletion() { failNext.withLock { $0 = true } }
    /// The next `recordFailure` fails (a write error while recording an outcome).
    func failNextFailure() { failNextFailureRecord.withLock { $0 = true } }
    /// Runs `hook` with every answer of `nextDueDate()` before the caller sees it.
    func afterNextDueDate(_ hook: @escaping @Sendable (Date?) -> Void) { afterNextDueDate.withLock { $0 = hook } }

    func completion(of id: OutboxEntry.ID) async throws(OutboxError) -> OutboxCompletion? {
        let fail = failNext.withLock { flag -> Bool in
            defer { flag = false }
            return flag
        }
        if fail { throw OutboxError(.storage, "read failed (injected)") }
        return try await base.completion(of: id)
    }
    func claimDue(at now: Date, limit: Int, lease: Duration, accepting: (String) -> Bool) async throws(OutboxError) -> OutboxClaim {
        try await base.claimDue(at: now, limit: limit, lease: lease, accepting: accepting)
    }
    func nextDueDate() async throws(OutboxError) -> Date? {
        let next = try await base.nextDueDate()
        afterNextDueDate.withLock { $0 }?(next)
        return next
    }
    func recordFailure(
        _ id: OutboxEntry.ID, _ failure: OutboxFailure, retryAt: Date, countsAsAttempt: Bool, serverAnsweredAt: Date?,
        outcomeUnknownAt: Date?
    ) async throws(OutboxError) -> (status: OutboxStatus, cascade: OutboxCascade) {
        let fail = failNextFailureRecord.withLock { flag -> Bool in
            defer { flag = false }
            return flag
        }
        if fail { throw OutboxError(.storage, "write failed (injected)") }
        return try await base.recordFailure(
            id, failure, retryAt: retryAt, countsAsAttempt: countsAsAttempt, serverAnsweredAt: serverAnsweredAt,
            outcomeUnknownAt: outcomeUnknownAt)
    }
    func reclaimExpiredLeases(at now: Date) async throws(OutboxError) -> [OutboxEntry.ID] { try await base.reclaimExpiredLeases(at: now) }
}
