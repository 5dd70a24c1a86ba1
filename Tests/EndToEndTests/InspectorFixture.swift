import CLITestSupport
import Foundation
import OutboxReferenceServer
import Testing

/// What the inspector's tests share: a queue with a write stuck behind a
/// quarantined parent, `outbox inspect` on it, and a drain by another process.
enum InspectorFixture {
    /// A queue of `count` messages, one the server refuses (`#reject`) and
    /// a write that depends on that one; returns the root and the two ids.
    static func stuckQueue(count: Int) async throws -> (root: String, parent: String, child: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-inspect-\(UUID().uuidString)").path
        let messages = try await OutboxTool.run([
            "enqueue", root, "--count", "\(count)", "--endpoint", "POST /messages",
            "--payload", #"{"conversation":"c","text":"hi"}"#,
        ])
        #expect(messages.status == 0, "\(messages.stderr)")
        let parent = try await OutboxTool.run([
            "enqueue", root, "--endpoint", "POST /messages", "--scope", "refused",
            "--payload", ##"{"conversation":"c","text":"#reject this one"}"##,
        ])
        let parentID = String(parent.stdout.split(separator: " ").first ?? "")
        let child = try await OutboxTool.run([
            "enqueue", root, "--endpoint", "POST /messages", "--scope", "child", "--depends-on", parentID,
            "--payload", #"{"conversation":"c","text":"after the refused one"}"#,
        ])
        #expect(parent.status == 0 && child.status == 0, "\(parent.stderr) \(child.stderr)")
        return (root, parentID, String(child.stdout.split(separator: " ").first ?? ""))
    }

    static func inspect(_ root: String, _ extra: [String] = []) async throws -> ServeProcess {
        try await ServeProcess(launching: ["inspect", root, "--port", "0", "--debug-exit-with-parent"] + extra, addressLine: "inspecting ")
    }

    static func drain(_ root: String, _ server: ReferenceServer) async throws -> OutboxTool.Run {
        try await OutboxTool.run([
            "drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--concurrency", "2",
            "--unscoped-delivery", "concurrent", "--timeout", "120",
        ])
    }

    /// One request over a fresh connection, as raw HTTP/1.1 (any `Host`,
    /// any header a browser would or would not send; `fromPage` adds the
    /// header the inspector's own page sends); the status and body.
    static func request(
        port: Int, _ method: String, _ path: String, host: String? = nil, headers: [String] = [], fromPage: Bool = true
    ) async throws -> (status: Int, body: String) {
        let head = (["\(method) \(path) HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")", "Connection: close", "Content-Length: 0"]
            + (fromPage ? ["X-Outbox-Inspector: 1"] : []) + headers).joined(separator: "\r\n") + "\r\n\r\n"
        guard let connection = try await RawConnection.connect(port: port, sending: head) else {
            throw RawConnection.Failure(description: "the inspector closed before the request was sent")
        }
        defer { connection.close() }
        let answer = String(decoding: await connection.readUntilClosed().bytes, as: UTF8.self)
        let status = answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let body = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, body)
    }
}
