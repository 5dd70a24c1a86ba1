import Foundation
import Outbox
import Testing

/// Exactly-once only holds inside the server's key retention, and a server
/// may report the first request in progress for a long time:
/// the key-retention guard, the in-progress budget, replays and
/// `markDelivered`. Manual clock: nothing sleeps.
@Suite("Unknown outcomes", .timeLimit(.minutes(5)))
struct UnknownOutcomeTests {
    static let lost = OutboxOutcome.interrupted(reason: "connection lost after the request was sent")
    static let day: TimeInterval = 24 * 3600

    @Test("an attempt of unknown outcome older than the key retention is not resent: it needs attention, and retry resends it with the same key")
    func retentionGuard() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("lost", Self.lost, .delivered(serverID: "s1"))
        let id = try await fixture.add("lost")
        let start = fixture.clock.now()
        await fixture.dispatcher.flush()
        #expect(try await fixture.store.entry(id)?.outcomeUnknownSince == start)

        // Offline for 25 hours: the server (default 24 h) may have forgotten the key.
        fixture.clock.advance(by: .seconds(Int64(Self.day) + 3600))
        let report = await fixture.dispatcher.flush()
        #expect(report.needsAttention == 1)
        #expect(report.delivered == 0)
        let entry = try #require(try await fixture.store.entry(id))
        #expect(entry.status == .conflict)
        #expect(entry.lastFailure?.cause == .keyMayBeForgotten)
        #expect(entry.lastFailure?.message?.contains("24 hours") == true)
        #expect(fixture.handler.deliveries(of: id).count == 1, "it was resent blindly")
        await fixture.events.wait { $0.contains { if case .conflict(id, _) = $0 { true } else { false } } }

        // The app decides: resend with the same key.
        try await fixture.dispatcher.retry(id)
        await fixture.dispatcher.flush()
        #expect(try await fixture.store.completion(of: id)?.serverID == "s1")
        let keys = Set(fixture.handler.deliveries(of: id).map(\.idempotencyKey))
        #expect(fixture.handler.deliveries(of: id).count == 2)
        #expect(keys.count == 1)
    }

    @Test("entries never attempted, or whose attempts all had definite outcomes, are not affected by the guard")
    func guardLeavesOthersAlone() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("refused", .notSent(reason: "connection refused"), .delivered(serverID: "a"))
        fixture.handler.script("busy", .transient(reason: "HTTP 503", httpStatus: 503, retryAfter: nil), .delivered(serverID: "b"))
        fixture.handler.script("polled", .inProgress(reason: "409", retryAfter: nil), .delivered(serverID: "c"))
        let refused = try await fixture.add("refused")
        let busy = try await fixture.add("busy")
        let polled = try await fixture.add("polled")
        await fixture.dispatcher.flush()
        for id in [refused, busy, polled] { #expect(try await fixture.store.entry(id)?.outcomeUnknownSince == nil) }
        let never = try await fixture.add("never")
        fixture.clock.advance(by: .seconds(Int64(3 * Self.day)))
        let report = await fixture.dispatcher.flush()
        #expect(report.delivered == 4)
        #expect(report.needsAttention == 0)
        #expect(try await fixture.store.completion(of: never) != nil)
    }

    @Test("within the retention an unknown outcome is resent with the same key; keyRetention nil turns the guard off")
    func withinRetentionResends() async throws {
        for (advance, retention) in [(23 * 3600, Duration?.some(.seconds(24 * 3600))), (30 * 24 * 3600, nil)] {
            let fixture = DispatcherFixture { $0.keyRetention = retention }
            fixture.handler.script("lost", Self.lost, .replayed(serverID: "s2"))
            let id = try await fixture.add("lost")
            await fixture.dispatcher.flush()
            fixture.clock.advance(by: .seconds(Int64(advance)))
            let report = await fixture.dispatcher.flush()
            #expect(report.delivered == 1)
            #expect(report.replayed == 1)
            #expect(try await fixture.store.completion(of: id)?.serverID == "s2")
        }
    }

    @Test("markDelivered: the app records the server id it found; the local: reference maps to it and dependents go")
    func markDelivered() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("parent", Self.lost)
        let parent = try await fixture.add("parent")
        let child = try await fixture.add("child", dependencies: [parent], endpoint: "/notes/\(parent.localReference)/replies")
        await fixture.expectThrows(.invalidTransition) { try await fixture.dispatcher.markDelivered(parent, serverID: "x") }
        await fixture.dispatcher.flush()
        fixture.clock.advance(by: .seconds(Int64(2 * Self.day)))
        await fixture.dispatcher.flush()
        #expect(try await fixture.store.status(parent) == .conflict)
        #expect(try await fixture.store.status(child) == .pending, "a dependent waits: it is not quarantined")

        try await fixture.dispatcher.markDelivered(parent, serverID: "found-7")
        #expect(try await fixture.store.completion(of: parent)?.serverID == "found-7")
        await fixture.dispatcher.flush()
        #expect(fixture.handler.deliveries(of: child).map(\.endpoint) == ["/notes/found-7/replies"])
        #expect(fixture.handler.deliveries(of: parent).count == 1)
        await fixture.expectThrows(.notFound) { try await fixture.dispatcher.markDelivered(OutboxEntry.ID(), serverID: nil) }
    }

    @Test("an attempt cut short by a crash has an unknown outcome: its lease end is kept across reopens, and the guard applies")
    func crashLeftLease() async throws {
        var subject = try await StoreUnderTest.make(.log)
        let id = try await subject.store.add(request())
        let sent = Date(timeIntervalSince1970: 1_900_000_000)
        _ = try await subject.store.beginAttempt(id, at: sent, lease: .seconds(90))
        try await subject.reopen(now: sent.addingTimeInterval(600))  // the app died mid-attempt
        let entry = try #require(try await subject.store.entry(id))
        #expect(entry.status == .pending)
        #expect(entry.outcomeUnknownSince == sent.addingTimeInterval(90))
        // Kept across another reopen, with a later answer's time beside it.
        _ = try await subject.store.beginAttempt(id, at: sent.addingTimeInterval(700), lease: .seconds(90))
        _ = try await subject.store.recordFailure(
            id, OutboxFailure(.transient, httpStatus: 503, message: "HTTP 503"), retryAt: sent.addingTimeInterval(701), countsAsAttempt: true,
            serverAnsweredAt: sent.addingTimeInterval(700), outcomeUnknownAt: nil)
        try await subject.reopen(now: sent.addingTimeInterval(800))
        let again = try #require(try await subject.store.entry(id))
        #expect(again.outcomeUnknownSince == sent.addingTimeInterval(90))
        #expect(again.firstAnswerAt == sent.addingTimeInterval(700))
        #expect(again.lastFailure?.httpStatus == 503)

        let clock = ManualOutboxClock(now: sent.addingTimeInterval(Self.day + 60))
        let handler = ScriptedHandler()
        let dispatcher = OutboxDispatcher(store: subject.store, handlers: ["post": handler], clock: clock)
        let report = await dispatcher.flush()
        #expect(report.needsAttention == 1)
        #expect(handler.deliveries.isEmpty)
        #expect(try await subject.store.status(id) == .conflict)
        try await subject.close()
    }

    @Test("a server that reports in progress is polled with short jittered delays that use no attempt, until the budget: then it needs attention")
    func inProgressBudget() async throws {
        let fixture = DispatcherFixture { $0.inProgressBudget = .seconds(60) }
        fixture.handler.script("stuck", .inProgress(reason: "HTTP 409, the request with this key is still in progress", retryAfter: nil))
        let id = try await fixture.add("stuck", maxAttempts: 1)
        let start = fixture.clock.now()
        var previous = start
        var polls = 0
        while try await fixture.store.status(id) != .conflict {
            await fixture.dispatcher.flush()
            guard let entry = try await fixture.store.entry(id), entry.status == .waitingToRetry else { break }
            polls += 1
            #expect(entry.attempts == 0)
            let delay = entry.nextAttemptAt.timeIntervalSince(fixture.clock.now())
            #expect(delay >= 0.125 && delay <= 4, "poll \(polls): \(delay) s")
            previous = entry.nextAttemptAt
            fixture.clock.set(to: previous)
        }
        #expect(polls > 15, "\(polls) polls in 60 s")
        let entry = try #require(try await fixture.store.entry(id))
        #expect(entry.status == .conflict)
        #expect(entry.lastFailure?.cause == .inProgressTooLong)
        #expect(entry.lastFailure?.message?.hasPrefix("60 seconds") == true, "\(entry.lastFailure.map(String.init(describing:)) ?? "")")
        #expect(fixture.clock.now() >= start.addingTimeInterval(60))
        #expect(fixture.clock.now() <= start.addingTimeInterval(64))
    }

    @Test("a replay counts as a delivery and as a replay, in the report and the events")
    func replayIsCounted() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("again", Self.lost, .replayed(serverID: "r1"))
        let id = try await fixture.add("again")
        var report = await fixture.dispatcher.flush()
        fixture.clock.advance(by: .seconds(5))
        report.add(await fixture.dispatcher.flush())
        #expect(report.delivered == 1)
        #expect(report.replayed == 1)
        #expect(report.interrupted == 1)
        await fixture.events.wait { $0.contains { $0.deliveredID == id } }
        let order = fixture.events.all.compactMap { event -> String? in
            switch event {
            case .replayed(id, "r1"): "replayed"
            case .delivered(id, "r1"): "delivered"
            default: nil
            }
        }
        #expect(order == ["replayed", "delivered"])
    }
}

extension DispatcherFixture {
    func expectThrows(_ code: OutboxError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected \(code)", sourceLocation: sourceLocation)
        } catch let error as OutboxError {
            #expect(error.code == code, sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }
}
