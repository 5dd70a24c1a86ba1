import Foundation
import Logging
import Outbox
import OutboxHTTP
import Testing

/// Keeping the promise with Idempotency-Key servers we did not write: three
/// middlewares from PyPI, each in front of a small API whose
/// writes take a while to apply, reached through a loopback proxy that
/// drops connections while the server is still applying, cuts answers in
/// the middle, and resets connections after the write was applied. Each
/// test compares what the outbox says it delivered (and with which server
/// id) with the server's own record of what it applied.
///
/// Needs the virtual environment of Scripts/interop/setup-venv.sh, which
/// the test process makes itself when it is missing (CI makes it first);
/// when it cannot, and outside CI, the suite is skipped and says why.
@Suite(
    "Third-party Idempotency-Key middlewares", .serialized, .timeLimit(.minutes(5)),
    .needsInteropEnvironment, .needsInteropSetup)
struct ThirdPartyMiddlewareTests {
    /// What a drain did, and the outbox's view of each entry.
    struct Drain {
        var report: OutboxFlushReport
        /// Idempotency key → the server id the outbox recorded (nil: not delivered).
        var serverIDs: [String: String?]
        var left: [OutboxEntry]
    }

    /// Enqueues `count` messages into a real (log) store and drains them
    /// through the proxy, as `outbox drain --until-empty` does.
    static func drain(_ count: Int, to server: InteropServer) async throws -> Drain {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-interop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var storeConfiguration = OutboxStoreConfiguration()
        storeConfiguration.log.logger = Logger(label: "interop", factory: { _ in SwiftLogNoOpLogHandler() })
        let store = try await LogOutboxStore.open(root: root.path, partition: "interop", configuration: storeConfiguration)
        var ids: [OutboxEntry.ID: String] = [:]
        for index in 0..<count {
            let entry = try await store.enqueue(OutboxEnqueueRequest(
                type: "message", method: "POST", endpoint: "/messages", payload: Array(#"{"text":"message \#(index)"}"#.utf8),
                headers: ["Content-Type": "application/json"]))
            if case .enqueued(let enqueued) = entry { ids[enqueued.id] = enqueued.idempotencyKey }
        }
        var handler = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
        handler.requestTimeout = .seconds(10)
        var configuration = OutboxDispatcherConfiguration()
        configuration.deliveryTimeout = .seconds(11)
        // Agreement under faults is the point here, not pacing: short waits
        // between attempts, so that a loaded machine still ends the day well
        // inside the drain's deadline (at the defaults, 20 % of connections
        // dropped cost seconds each, and a busy run once left 12 of 100).
        configuration.backoff = OutboxBackoff(base: .milliseconds(50), cap: .seconds(1))
        configuration.interruptedBackoff = OutboxBackoff(base: .milliseconds(50), cap: .seconds(1))
        configuration.inProgressBackoff = OutboxBackoff(base: .milliseconds(50), cap: .seconds(1))
        configuration.logger = Logger(label: "interop", factory: { _ in SwiftLogNoOpLogHandler() })
        let dispatcher = OutboxDispatcher(
            store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: handler), configuration: configuration)
        let report = await dispatcher.drain(until: Date().addingTimeInterval(120))
        await dispatcher.stop()
        var serverIDs: [String: String?] = [:]
        for (id, key) in ids { serverIDs[key] = try await store.completion(of: id)?.serverID }
        let left = try await store.entries(matching: .all)
        try await store.close()
        #expect(ids.count == count)
        return Drain(report: report, serverIDs: serverIDs, left: left)
    }

    /// The outbox's record against the server's: every write delivered once,
    /// with the id the server created for it, and nothing needing a person.
    static func expectAgreement(_ drain: Drain, _ server: InteropServer.Report, count: Int, _ middleware: InteropServer.Middleware) {
        let report = drain.report
        #expect(report.delivered == count, "\(middleware): \(report); left: \(drain.left.map { "\($0.status): \($0.lastFailure.map(String.init(describing:)) ?? "")" })")
        #expect(report.conflicts == 0, "\(middleware): \(drain.left.map { $0.lastFailure.map(String.init(describing:)) ?? "" })")
        #expect(report.needsAttention == 0)
        #expect(report.quarantined == 0)
        #expect(drain.left.isEmpty)
        #expect(server.applied.count == count, "\(middleware): the server applied \(server.applied.count) keys")
        for (key, serverID) in drain.serverIDs {
            let applied = server.applied[key] ?? []
            #expect(applied.count == 1, "\(middleware): key \(key) applied \(applied.count) times")
            #expect(serverID != nil && serverID == applied.first, "\(middleware): outbox says \(String(describing: serverID)), server applied \(applied)")
        }
        // Replays and interruptions are counted against what was on the wire,
        // not against timing: a faulted request is usually the one that
        // applies its key, so its resend is answered by a replay, but on a
        // loaded machine the resend can reach a threaded server's lock first
        // and apply it (fresh answer), leaving the replay to the vanished
        // first request. Every replay the client got is counted as one, and
        // only those.
        #expect(
            report.replayed == server.replayedAnswers,
            "\(middleware): \(report.replayed) replays counted, \(server.replayedAnswers) replayed answers reached the client")
        #expect(server.replayedAnswers > 0 && server.replayedAnswers <= server.faultedKeys.count, "\(middleware): \(server)")
        // Every fault the client can see is an interrupted attempt; an
        // in-progress 409 cut where its body ends with the connection looks
        // whole and is read as in progress, which it is.
        #expect(
            report.interrupted == server.totalFaults - server.unnoticeableCuts,
            "\(middleware): \(report.interrupted) interrupted, proxy \(server.faults), \(server.unnoticeableCuts) unnoticeable; \(report)")
    }

    @Test("done when: 100 entries through a proxy dropping 20 % of connections while the server is still applying: 100 delivered with their server ids, 0 conflicts, 0 needing attention, every key applied once",
          arguments: InteropServer.Middleware.allCases)
    func hundredEntriesTwentyPercentDrops(middleware: InteropServer.Middleware) async throws {
        let server = try await InteropServer(middleware, rate: 0.2, fault: "close-before-answer", applySeconds: 0.3, dropAfter: 0.1)
        let drain = try await Self.drain(100, to: server)
        let record = try await server.report()
        await server.stop()
        Self.expectAgreement(drain, record, count: 100, middleware)
        #expect(record.faults["close-before-answer", default: 0] >= 10, "\(middleware): the proxy dropped only \(record.faults)")
        print("interop \(middleware): 100 entries, \(record.requests) requests, \(record.totalFaults) dropped while applying; "
              + "delivered \(drain.report.delivered), replayed \(drain.report.replayed), in progress \(drain.report.inProgress), "
              + "interrupted \(drain.report.interrupted), conflicts \(drain.report.conflicts), needs attention \(drain.report.needsAttention)")
    }

    @Test("every fault: closed before any answer while applying, closed mid-answer, reset after apply (30 % of requests)",
          arguments: InteropServer.Middleware.allCases)
    func everyFault(middleware: InteropServer.Middleware) async throws {
        let server = try await InteropServer(middleware, rate: 0.3, fault: "mix", applySeconds: 0.2, dropAfter: 0.05, seed: 7)
        let drain = try await Self.drain(40, to: server)
        let record = try await server.report()
        await server.stop()
        Self.expectAgreement(drain, record, count: 40, middleware)
        for fault in ["close-before-answer", "close-mid-answer", "rst-after-apply"] {
            #expect(record.faults[fault, default: 0] > 0, "\(middleware): no \(fault) in \(record.faults)")
        }
    }

    @Test("a keep-alive connection idle past uvicorn's keep-alive (5 s) still gets its answer through the proxy: the harness itself adds no fault")
    func idleKeepAliveThroughTheProxy() async throws {
        let server = try await InteropServer(.asgiIdempotencyHeader, rate: 0)
        // The transport keeps idle connections 20 s.
        let (first, second) = try await AsyncHTTPClientTransport.with(configuration: .init()) { transport in
            func post(_ key: String) async -> HTTPTransportResult {
                await transport.send(
                    HTTPTransportRequest(
                        method: "POST", url: server.baseURL.appendingPathComponent("messages"),
                        headers: [("Content-Type", "application/json"), ("Idempotency-Key", key)],
                        body: Array(#"{"text":"idle"}"#.utf8)),
                    timeout: .seconds(10))
            }
            let first = await post("idle-1")
            // Not a timing assertion: the idle time is the condition under test
            // (uvicorn's keep-alive timer, in another process, on the real clock).
            try await Task.sleep(for: .milliseconds(6500))
            return (first, await post("idle-2"))
        }
        let record = try await server.report()
        await server.stop()
        for (name, result) in [("first", first), ("after the idle gap", second)] {
            guard case .response(let status, _, _) = result else {
                Issue.record("\(name): no answer: \(result); proxy \(record.faults)")
                continue
            }
            #expect(status == 201, "\(name)")
        }
        #expect(record.totalFaults == 0, "\(record.faults)")
        #expect(record.applied.count == 2)
    }
}
