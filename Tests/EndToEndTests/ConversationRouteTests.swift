import CLITestSupport
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// README.md's app sample posts `SendMessage` to
/// `/conversations/{id}/messages`: the reference server must serve that
/// route with that payload, and say which routes it serves.
@Suite("The README's route on the reference server", .timeLimit(.minutes(5)))
struct ConversationRouteTests {
    @Test("the README's SendMessage is applied once, and its repeat is answered from the key")
    func readmePayload() async throws {
        try await withServer { server in
            let payload = #"{"body":"hi","conversationID":"c1"}"#  // SendMessage's JSON encoding
            let first = try await post(server, "/conversations/c1/messages", payload, key: "key-1")
            #expect(first.status == 201)
            #expect(first.body == #"{"id":"msg-1"}"#)
            let repeated = try await post(server, "/conversations/c1/messages", payload, key: "key-1")
            #expect(repeated.status == 201)
            #expect(repeated.body == #"{"id":"msg-1"}"#)
            let ledger = server.ledger
            #expect(ledger.applied == ["key-1": 1])
            #expect(ledger.messages == 1)
            #expect(ledger.replays == 1)
        }
    }

    @Test(
        "a payload that is not the README's is rejected with 422 and applies nothing",
        arguments: [
            #"{"conversationID":"c1"}"#, #"{"body":"","conversationID":"c1"}"#,
            #"{"body":"hi","conversationID":"c2"}"#, #"{"body":"bad #reject","conversationID":"c1"}"#,
        ])
    func rejected(payload: String) async throws {
        try await withServer { server in
            let response = try await post(server, "/conversations/c1/messages", payload, key: "key-2")
            #expect(response.status == 422)
            #expect(server.ledger.applied.isEmpty)
            #expect(server.ledger.rejected == 1)
        }
    }

    @Test("`outbox serve --help` lists every route, the README's included")
    func helpListsRoutes() async throws {
        let run = try await OutboxTool.run(["serve", "--help"])
        #expect(run.status == 0)
        let help = run.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).prefix(2).joined(separator: " ") }
        for route in [
            "POST /albums", "POST /albums/{album}/photos", "PUT /posts/{post}/like", "POST /messages",
            "POST /conversations/{conversation}/messages", "GET /ledger",
        ] {
            #expect(help.contains(route), "\(route) missing from:\n\(run.stdout)")
        }
    }

    /// Runs `body` against a fresh reference server, and stops it.
    private func withServer(_ body: (ReferenceServer) async throws -> Void) async throws {
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore())
        do { try await body(server) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func post(
        _ server: ReferenceServer, _ path: String, _ body: String, key: String
    ) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: server.baseURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
