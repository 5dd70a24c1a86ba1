import Foundation
import Outbox
import OutboxHTTP
import Testing

/// What Idempotency-Key servers we did not write say, and how the handler
/// reads it: in progress is not a conflict, a replay is a
/// delivery.
@Suite("Response classifier", .serialized, .timeLimit(.minutes(5)))
struct ResponseClassifierTests {
    /// A delivery whose earlier attempt had an unknown outcome (or not).
    static func delivery(afterUnknownOutcome: Bool, attempt: Int = 2) -> OutboxDelivery {
        var delivery = HTTPOutboxHandlerTests.delivery(attempt: attempt)
        delivery.entry.outcomeUnknownSince = afterUnknownOutcome ? Date(timeIntervalSince1970: 1_800_000_000) : nil
        return delivery
    }

    static func outcome(
        status: Int, headers: [String: String] = [:], body: String, afterUnknownOutcome: Bool = true,
        classifiers: [HTTPResponseClassifier] = HTTPResponseClassifier.standard
    ) async throws -> OutboxOutcome {
        let server = try await LoopbackServer { _, _ in .init(status: status, headers: headers, body: body) }
        defer { server.stop() }
        var configuration = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
        configuration.responseClassifiers = classifiers
        return try await HTTPOutboxHandler(configuration: configuration).deliver(delivery(afterUnknownOutcome: afterUnknownOutcome))
    }

    /// What each server answers while the first request with the key still runs.
    static let inProgressAnswers: [(server: String, status: Int, headers: [String: String], body: String)] = [
        ("asgi-idempotency-header 0.2.0", 409, ["Content-Type": "application/json"],
         #"{"detail":"Request already pending for idempotency key 'k1'"}"#),
        ("fastapi-idempotency 0.1.1", 409, ["Content-Type": "application/json"],
         #"{"detail":"A request with idempotency key 'k1' is still being processed."}"#),
        ("drf-idempotency 1.0.0", 409, ["Content-Type": "application/json"],
         #"{"detail": "A request with Idempotency-Key 'k1' is already being processed. Retry after it completes."}"#),
        ("Stripe", 409, ["Content-Type": "application/json"],
         #"{"error":{"type":"idempotency_error","code":"idempotency_key_in_use","message":"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): k1. Please try again later."}}"#),
        ("IETF draft", 409, ["Content-Type": "application/problem+json"],
         #"{"type":"https://developer.example.com/idempotency","title":"A request is outstanding for this Idempotency-Key","detail":"A request with the same Idempotency-Key for the same operation is being processed or is outstanding."}"#),
        ("swift-outbox IdempotencyKeyMiddleware", 409, ["Content-Type": "application/problem+json", "Retry-After": "1"],
         #"{"detail":"retry later","status":409,"title":"Request in progress","type":"https://github.com/swift-outbox/problems/in-progress"}"#),
    ]

    @Test("each server's in-progress answer is read as in progress, on a first attempt too (not a conflict)", arguments: 0..<6)
    func inProgressAnswers(index: Int) async throws {
        let answer = Self.inProgressAnswers[index]
        for afterUnknownOutcome in [true, false] {
            let outcome = try await Self.outcome(
                status: answer.status, headers: answer.headers, body: answer.body, afterUnknownOutcome: afterUnknownOutcome)
            guard case .inProgress(let reason, let retryAfter) = outcome else {
                Issue.record("\(answer.server): must be in progress, got \(outcome)")
                continue
            }
            #expect(reason.contains("in progress"))
            #expect(retryAfter == (answer.headers["Retry-After"] == nil ? nil : .seconds(1)))
        }
    }

    @Test("a bare 409 to a resend after an unknown outcome is in progress; on a first attempt it is a conflict")
    func bare409DependsOnUnknownOutcome() async throws {
        let afterLoss = try await Self.outcome(status: 409, body: "", afterUnknownOutcome: true)
        guard case .inProgress(let reason, nil) = afterLoss else {
            Issue.record("a bare 409 after an unknown outcome must be in progress, got \(afterLoss)")
            return
        }
        #expect(reason.contains("unknown outcome"))
        let business = #"{"error":"the album was renamed meanwhile"}"#
        #expect(try await Self.outcome(status: 409, body: business, afterUnknownOutcome: false)
            == .conflict(reason: "HTTP 409: \(business)", httpStatus: 409))
    }

    @Test("an app's classifier, put first, keeps its own 409 a conflict even after an unknown outcome")
    func appClassifierWins() async throws {
        let versionMismatch = HTTPResponseClassifier("version mismatch") { answer in
            answer.status == 409 && answer.field("code") == "version_mismatch" ? .conflict : nil
        }
        let body = #"{"code":"version_mismatch","detail":"the request in progress of another user won"}"#
        let outcome = try await Self.outcome(
            status: 409, body: body, classifiers: [versionMismatch] + HTTPResponseClassifier.standard)
        #expect(outcome == .conflict(reason: "HTTP 409: \(body)", httpStatus: 409))
        // Without it, the sentence reads as in progress.
        guard case .inProgress = try await Self.outcome(status: 409, body: body) else {
            Issue.record("the standard rules read \"in progress\" in the detail")
            return
        }
    }

    @Test("a replayed answer is a delivery counted as a replay, with the server id from the replayed body, whatever the header's spelling",
          arguments: ["Idempotent-Replayed", "Idempotency-Replayed", "X-Idempotent-Replayed", "X-Idempotency-Replayed", "Idempotency-Replay"])
    func replayedSpellings(header: String) async throws {
        for value in ["true", "True", "1"] {
            let outcome = try await Self.outcome(status: 201, headers: [header: value], body: #"{"id":"m17","text":"hi"}"#)
            #expect(outcome == .replayed(serverID: "m17"), "\(header): \(value)")
        }
        // drf-idempotency marks fresh answers "false".
        #expect(try await Self.outcome(status: 201, headers: [header: "false"], body: #"{"id":"m18"}"#) == .delivered(serverID: "m18"))
        #expect(try await Self.outcome(status: 200, headers: ["X-Idempotency-Status": "replayed"], body: #"{"id":"m19"}"#)
            == .replayed(serverID: "m19"))
        #expect(try await Self.outcome(status: 200, headers: ["X-Idempotency-Status": "processed"], body: #"{"id":"m20"}"#)
            == .delivered(serverID: "m20"))
    }

    @Test("a 201 whose body ends with the connection (no Content-Length) and is cut mid-JSON is interrupted, not delivered without its id; whole, it delivers")
    func cutCloseDelimitedAnswer() async throws {
        let server = try RawSocketServer { _, earlier in
            earlier == 0 ? .closeMidCloseDelimitedResponse : .answer(status: 201, body: #"{"id":"whole"}"#)
        }
        defer { server.stop() }
        let handler = HTTPOutboxHandler(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        let cut = try await handler.deliver(HTTPOutboxHandlerTests.delivery())
        guard case .interrupted(let reason) = cut else {
            Issue.record("a cut answer must be interrupted, got \(cut)")
            return
        }
        #expect(reason.contains("cut"))
        #expect(try await handler.deliver(HTTPOutboxHandlerTests.delivery()) == .delivered(serverID: "whole"))
    }

    @Test("a success body is the app's data: words like 'in progress' or 'already used' in it are never a signal")
    func successBodiesAreData() async throws {
        let body = #"{"id":"t1","title":"in progress","detail":"key already used"}"#
        #expect(try await Self.outcome(status: 201, body: body) == .delivered(serverID: "t1"))
    }

    @Test("reuse answers of the middlewares are already processed; a validation 422 stays permanent")
    func reuseAnswers() async throws {
        for body in [
            #"{"detail":"Idempotency-Key 'k1' was already used for a different request."}"#,
            #"{"detail": "The Idempotency-Key 'k1' was previously used with a different request. Use a new key for a different request body."}"#,
            #"{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}"#,
        ] {
            guard case .alreadyProcessed(_, 422) = try await Self.outcome(status: 422, body: body) else {
                Issue.record("must be already processed: \(body)")
                continue
            }
        }
        guard case .permanent(_, 422) = try await Self.outcome(status: 422, body: #"{"detail":"text: field required"}"#) else {
            Issue.record("a validation 422 must be permanent")
            return
        }
    }
}
