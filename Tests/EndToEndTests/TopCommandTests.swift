import CLITestSupport
import Foundation
import IdempotencyKeyMiddleware
import OutboxReferenceServer
import Testing

/// `outbox top`: a queue followed while another process drains it, through
/// the snapshot that process writes; then the queue read once nobody holds
/// it; and the full-screen view under a real terminal (a pseudo-terminal
/// of its own, through script(1)).
@Suite("outbox top", .serialized, .timeLimit(.minutes(5)))
struct TopCommandTests {
    /// A queue of `count` writes under a new root, and a server that holds
    /// every request for `latency` (a network's round trip).
    private static func queueAndServer(count: Int, latency: Duration) async throws -> (root: String, server: ReferenceServer) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-top-\(UUID().uuidString)").path
        let enqueue = try await OutboxTool.run([
            "enqueue", root, "--count", "\(count)", "--endpoint", "POST /messages",
            "--payload", #"{"conversation":"c","text":"hi"}"#,
        ])
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        let server = try await ReferenceServer.start(keyStore: InMemoryIdempotencyKeyStore(), latency: ServerLatency(base: latency))
        return (root, server)
    }

    private static func drain(_ root: String, _ server: ReferenceServer) -> Task<OutboxTool.Run, any Error> {
        Task {
            try await OutboxTool.run([
                "drain", root, "--base-url", "http://127.0.0.1:\(server.port)", "--concurrency", "2",
                "--unscoped-delivery", "concurrent", "--timeout", "120",
            ])
        }
    }

    /// The number after `name ` on the counts line of a block of `top`.
    private static func count(_ name: String, in text: String) -> Int? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("pending ") }),
            let range = line.range(of: "\(name) ")
        else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    @Test("top follows a queue another process drains (its snapshot: counts falling), then --once reads it once that ends")
    func followsAnotherProcess() async throws {
        let (root, server) = try await Self.queueAndServer(count: 40, latency: .milliseconds(250))
        // One top process refreshing every 200 ms into a pipe (a block per
        // refresh); the test wakes on each block it prints, never on a timer.
        let top = try ServeProcess(following: ["top", root, "--interval", "0.2", "--count", "3000"])
        let drain = Self.drain(root, server)
        let moving = await top.waitForOutput { text in
            // The unsent count of every block (each starts "outbox top") that names the running drain, in order.
            let seen = text.components(separatedBy: "outbox top  ").compactMap { block -> Int? in
                guard block.contains("dispatcher running  (process "), let pending = Self.count("pending", in: block),
                    let inFlight = Self.count("inFlight", in: block)
                else { return nil }
                return pending + inFlight
            }
            guard seen.count >= 2, seen.last! < seen.first! else { return nil }
            return "\(seen)"
        }
        #expect(moving != nil, "top never showed the drain moving: \(top.printed)")
        await top.stop()
        let drained = try await drain.value
        #expect(drained.status == 0, "\(drained.stderr)")

        let after = try await OutboxTool.run(["top", root, "--once"])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.stdout.contains("read from the queue; no process drains it, the last one stopped"), "\(after.stdout)")
        #expect(Self.count("pending", in: after.stdout) == 0)
        #expect(after.stdout.contains("oldest waiting: none"), "\(after.stdout)")
        await server.stop()
    }

    @Test("under a real terminal: the full-screen view shows the queue, follows the drain, and q quits leaving the terminal as it was")
    func realTerminal() async throws {
        // util-linux's script(1) gives top a pseudo-terminal of its own:
        // isatty, a terminal mode to change and restore, keys typed into it.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            #expect(ProcessInfo.processInfo.environment["CI"] == nil, "script(1) is not installed")
            return
        }
        let (root, server) = try await Self.queueAndServer(count: 30, latency: .milliseconds(250))
        let tool = try #require(OutboxTool.executable).path
        let terminal = try PseudoTerminal(
            command: "stty cols 120 rows 40; exec \"\(tool)\" top \"\(root)\" --interval 0.2 --count 3000")
        defer { terminal.kill() }

        let idle = try await terminal.waitFor("pending 30")
        #expect(idle.contains("\u{1B}[?1049h"), "top did not switch to the alternate screen")
        #expect(idle.contains("read from the queue; no process drains it"))

        let drain = Self.drain(root, server)
        let moving = try await terminal.waitFor("dispatcher running  (process ")
        #expect(moving.contains("delivered/s, last 60 s"))
        #expect(try await drain.value.status == 0)
        _ = try await terminal.waitFor("pending 0  inFlight 0")

        terminal.type("q")
        let status = try await terminal.exitStatus()
        #expect(status == 0)
        let output = terminal.output
        let left = try #require(output.range(of: "\u{1B}[?1049l", options: .backwards), "top did not leave the alternate screen")
        #expect(output.range(of: "\u{1B}[?25h", range: output.startIndex..<output.endIndex) != nil, "the cursor was left hidden")
        #expect(output[left.upperBound...].contains("outbox top") == false, "top drew after it left")
        await server.stop()
    }
}
