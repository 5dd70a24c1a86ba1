import Foundation
import Outbox
import OutboxHTTP
import Testing

/// A body streamed from its payload file stops with its request. The server
/// here reads the head and never the body, so the client's socket buffers
/// fill and async-http-client holds the stream back (its write future waits
/// for the connection to drain); then the request fails — by the client's
/// deadline or by the server resetting the connection. async-http-client
/// 1.37 drops that held-back write future without completing it, so a
/// stream that only waited on it would wait forever: one task and its
/// buffers leaked per failed upload (what LeakSanitizer found in the
/// payload torture's app). `send` returns only once the stream has stopped.
@Suite("Streamed request bodies", .serialized, .timeLimit(.minutes(5)))
struct StreamedBodyTests {
    /// Past what the connection holds: the client's send buffer (Linux
    /// grows it to 4 MiB) plus the server's receive buffer, kept small.
    static let bodyBytes = 12 << 20

    /// A store at `root` holding one upload of ``bodyBytes`` kept in a payload file.
    static func storeWithFileBody(at root: URL) async throws -> (LogOutboxStore, OutboxLargePayload) {
        var configuration = OutboxStoreConfiguration()
        configuration.largePayloadThreshold = 4096
        let store = try await LogOutboxStore.open(root: root, partition: "user", configuration: configuration)
        let body = [UInt8](repeating: UInt8(ascii: "b"), count: bodyBytes)
        let result = try await store.enqueue(
            OutboxEnqueueRequest(type: "upload", method: "POST", endpoint: "/uploads", payload: body))
        guard case .enqueued(let entry) = result else { throw StoreSetupFailed(detail: "not enqueued: \(result)") }
        let file = try #require(entry.largePayload, "the body was not kept in a file")
        return (store, file)
    }

    struct StoreSetupFailed: Error { var detail: String }

    static func upload(_ file: OutboxLargePayload, to server: RawSocketServer) -> HTTPTransportRequest {
        HTTPTransportRequest(
            method: "POST", url: server.baseURL.appendingPathComponent("uploads"), headers: [], body: [], streamedBody: file)
    }

    @Test(
        "a request that fails while its file body is held back leaves no stream running",
        arguments: [
            RawSocketServer.Behaviour.stallInBody(resetAfter: nil),  // the client's deadline ends it
            .stallInBody(resetAfter: .milliseconds(1500)),  // the server resets it
        ])
    func failedRequestStopsItsStream(_ behaviour: RawSocketServer.Behaviour) async throws {
        let server = try RawSocketServer(receiveBuffer: 16 << 10) { _, _ in behaviour }
        defer { server.stop() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-stream-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, file) = try await Self.storeWithFileBody(at: root)
        let request = Self.upload(file, to: server)
        let timeout: Duration = behaviour == .stallInBody(resetAfter: nil) ? .seconds(10) : .seconds(60)
        try await AsyncHTTPClientTransport.with(configuration: .init()) { transport in
            let outcome = await transport.send(request, timeout: timeout)
            guard case .failure(let failure) = outcome else {
                Issue.record("a request whose body the server never read was answered: \(outcome)")
                return
            }
            #expect(failure.stage == .notSent, "the body was never all written")
            #expect(server.captures.count == 1, "one request head reached the server")
            #expect(transport.bodyStreamsRunning == 0, "the stream reading the file outlived its request")
        }
        try await store.close()
    }

    @Test("a server that refuses the upload before reading its body: its 413 is the answer, not a timeout")
    func earlyRefusalIsTheAnswer() async throws {
        let server = try RawSocketServer(receiveBuffer: 16 << 10) { _, _ in .refuseTooLargeUnread }
        defer { server.stop() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-stream-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, file) = try await Self.storeWithFileBody(at: root)
        let request = Self.upload(file, to: server)
        try await AsyncHTTPClientTransport.with(configuration: .init()) { transport in
            let outcome = await transport.send(request, timeout: .seconds(10))
            guard case .response(let status, _, _) = outcome else {
                Issue.record("the server's 413 was lost: \(outcome)")
                return
            }
            #expect(status == 413)
            #expect(transport.bodyStreamsRunning == 0)
        }
        try await store.close()
    }
}
