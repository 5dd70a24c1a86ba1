import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The in-progress path end to end, at the HTTP level: the reference
/// server's handler is slow *while the key is claimed*, the client times
/// out and retries.
///
/// A dispatcher-level version (once OutboxHTTP treats 409 + `Retry-After` as
/// transient) should assert: the entry is delivered, never parked as a
/// conflict; at least one `waitingToRetry` event carries the 409 and is
/// scheduled no earlier than the `Retry-After`; the ledger shows the key
/// applied exactly once with `inProgress ≥ 1` and `replays ≥ 1`; the store
/// is empty at the end.
@Suite("Slow handler while the key is in progress", .serialized, .timeLimit(.minutes(5)))
struct SlowApplyTests {
    @Test("a retry during a slow apply gets 409 + Retry-After, a later one the replay; the write is applied once")
    func retryDuringSlowApply() async throws {
        var faults = ServerFaults()
        faults.slowApply = 1
        faults.slowApplyDelay = .seconds(3)
        let server = try await ReferenceServer.start(faults: faults, keyStore: InMemoryIdempotencyKeyStore())
        let url = server.baseURL.appendingPathComponent("messages")
        let body = #"{"conversation":"c1","text":"hello"}"#
        let key = "slow-apply-1"

        // The client gives up after 1 s (libcurl's smallest timeout on Linux);
        // the server's handler goes on working with the key claimed.
        let first = Task { try await HTTPReply.send("POST", url, key: key, body: body, timeout: 1) }
        await server.waitForActivity { $0.slowAppliesHeld > 0 }

        let retry = try await HTTPReply.send("POST", url, key: key, body: body)
        #expect(retry.status == 409)
        #expect(retry.headers["retry-after"] == "1")
        #expect(retry.headers["content-type"] == "application/problem+json")
        #expect(retry.json?["type"] as? String == IdempotencyProblem.inProgress.type)

        let firstOutcome = await first.result
        switch firstOutcome {
        case .success(let reply): Issue.record("the first request was answered (\(reply.status)) instead of timing out")
        case .failure(let error): #expect((error as? URLError)?.code == .timedOut, "\(error)")
        }

        // Once the first run has finished, a retry gets its stored answer.
        await server.waitForActivity { $0.writesInFlight == 0 && $0.slowAppliesHeld == 0 }
        let later = try await HTTPReply.send("POST", url, key: key, body: body)
        #expect(later.status == 201)
        #expect(later.headers["idempotent-replayed"] == "true")
        #expect(later.json?["id"] as? String == "msg-1")

        let ledger = server.ledger
        #expect(ledger.applied[key] == 1)
        #expect(ledger.messages == 1)
        #expect(ledger.inProgress >= 1)
        #expect(ledger.replays >= 1)
        #expect(ledger.faults["slowApply"] ?? 0 >= 1)
        await server.stop()
    }
}
