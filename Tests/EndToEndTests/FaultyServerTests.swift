import CLITestSupport
import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxHTTP
import OutboxReferenceServer
import OutboxLocking
import Testing

/// The whole path — store, dispatcher, HTTP handler, network, middleware,
/// API — under each kind of server fault.
@Suite("Outbox against a faulty server", .serialized, .timeLimit(.minutes(5)))
struct FaultyServerTests {
    /// Counts delivered events and lets the test await a number of them.
    final class Deliveries: Sendable {
        private let state = Locked<(count: Int, conflicts: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, 0, []))
        private let task = Locked<Task<Void, Never>?>(nil)

        init(_ events: AsyncStream<OutboxEvent>) {
            let task = Task { [weak self] in
                for await event in events {
                    if case .delivered = event { self?.add() }
                    if case .quarantined = event { self?.add() }
                    if case .conflict = event { self?.add(conflict: true) }
                }
            }
            self.task.withLock { $0 = task }
        }

        /// Entries that ended in `conflict` (they count as finished too).
        var conflicts: Int { state.withLock { $0.conflicts } }

        private func add(conflict: Bool = false) {
            let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.count += 1
                if conflict { state.conflicts += 1 }
                let met = state.waiters.filter { $0.0 <= state.count }.map(\.1)
                state.waiters.removeAll { $0.0 <= state.count }
                return met
            }
            for continuation in ready { continuation.resume() }
        }

        /// Returns once `count` entries have been delivered (or quarantined).
        func wait(for count: Int) async {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if state.count >= count { return true }
                    state.waiters.append((count, continuation))
                    return false
                }
                if done { continuation.resume() }
            }
        }

        deinit { task.withLock { $0?.cancel() } }
    }

    @Test("every write is applied exactly once, whatever the fault", arguments: ServerFaults.Fault.allCases)
    func exactlyOnceUnder(fault: ServerFaults.Fault) async throws {
        var faults = ServerFaults()
        faults.retryAfterSeconds = 0
        faults.timeoutDelay = .milliseconds(1500)
        faults.slowDelay = .milliseconds(50)
        faults.seed = 7
        switch fault {
        case .serverError: faults.serverError = 0.5
        case .tooManyRequests: faults.tooManyRequests = 0.5
        case .delayPastTimeout: faults.delayPastTimeout = 0.3
        case .dropAfterApply: faults.dropAfterApply = 0.5
        case .slow: faults.slow = 0.5
        case .slowApply:
            faults.slowApply = 0.3
            faults.slowApplyDelay = .milliseconds(1500)
        case .closeBeforeResponse: faults.closeBeforeResponse = 0.5
        case .resetAfterApply: faults.resetAfterApply = 0.5
        case .halfOpen:
            faults.halfOpen = 0.3
            faults.halfOpenHold = .milliseconds(1500)  // past the client's 1 s timeout
        case .idleClose:
            faults.idleClose = 0.5
            faults.idleCloseDelay = .milliseconds(1)
        case .seeOther: faults.seeOther = 0.5
        }
        let server = try await ReferenceServer.start(faults: faults, keyStore: InMemoryIdempotencyKeyStore())
        let store = InMemoryOutboxStore(partition: "e2e")
        var http = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
        http.requestTimeout = .seconds(1)
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumConcurrentDeliveries = 8
        configuration.backoff = OutboxBackoff(base: .milliseconds(10), cap: .milliseconds(100))
        configuration.maximumAge = nil
        configuration.randomSeed = 3
        let dispatcher = OutboxDispatcher(store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: configuration)
        let deliveries = Deliveries(dispatcher.events())
        await dispatcher.start()

        var keys: [String] = []
        for index in 0..<20 {
            let body = #"{"conversation":"c\#(index % 3)","text":"hello \#(index)"}"#
            let result = try await dispatcher.enqueue(
                OutboxEnqueueRequest(type: "send_message", method: "POST", endpoint: "/messages", payload: Array(body.utf8),
                                     headers: ["Content-Type": "application/json"], scope: "c\(index % 3)"))
            guard case .enqueued(let entry) = result else { throw CancellationError() }
            keys.append(entry.idempotencyKey)
        }
        await deliveries.wait(for: 20)
        await dispatcher.stop()
        await server.stop()

        let ledger = server.ledger
        #expect(try await store.summary().total == 0, "\(fault)")
        for key in keys { #expect(ledger.applied[key] == 1, "\(fault): key \(key) applied \(ledger.applied[key] ?? 0) times") }
        #expect(ledger.appliedTwice.isEmpty)
        #expect(ledger.messages == 20)
        #expect((ledger.faults[fault.rawValue] ?? 0) > 0, "the fault was never injected")
        if [.delayPastTimeout, .dropAfterApply, .resetAfterApply, .halfOpen].contains(fault) {
            // The write happened but its answer was lost: the retry was answered from the key store.
            #expect(ledger.replays + ledger.inProgress > 0)
        }
        if fault == .slowApply {
            // Retries met the first request still running (409 + Retry-After),
            // waited, and got its stored answer: delivered, never a conflict.
            #expect(ledger.inProgress > 0)
            #expect(ledger.replays > 0)
            #expect(deliveries.conflicts == 0)
        }
    }

    @Test("outbox demo on a small day: every write lands exactly once, the rejected ones are quarantined")
    func demoLedger() async throws {
        let run = try await OutboxTool.run(["demo", "--count", "30", "--fault-rate", "0.3", "--seed", "11", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let line = try #require(run.stdoutLines.last)
        let ledger = try #require(OutboxTool.jsonObject(line))
        #expect((ledger["violations"] as? [Any])?.isEmpty == true, "\(ledger["violations"] ?? "")")
        #expect((ledger["appliedTwice"] as? [Any])?.isEmpty == true)
        #expect((ledger["lost"] as? [Any])?.isEmpty == true)
        #expect(ledger["remaining"] as? Int == 0)
        let expected = try #require(ledger["expectedDeliveries"] as? Int)
        #expect(ledger["appliedExactlyOnce"] as? Int == expected)
        let quarantined = try #require(ledger["quarantined"] as? [[String: Any]])
        #expect(quarantined.count == 1)
        // Each says why it waits and what would move it, as `outbox explain` would.
        #expect((quarantined.first?["why"] as? String)?.contains("HTTP 422): retry it or discard it") == true, "\(quarantined)")
        #expect((ledger["remappedIDs"] as? Int ?? 0) > 0)
        #expect(run.stderrLines.contains { $0.contains("app killed") })
    }
}
