import CLITestSupport
import Foundation
import Outbox
import Testing

/// Durations too long for any clock were converted to `Int64` milliseconds
/// or nanoseconds and trapped (SIGILL, "Double value cannot be converted to
/// Int64") instead of being refused: each is a usage error now, naming the
/// option and the longest duration accepted.
@Suite("huge durations on the command line", .timeLimit(.minutes(5)))
struct HugeDurationTests {
    @Test("outbox serve --retention 1e300 is a usage error, not a crash")
    func serveRetention() async throws {
        let run = try await OutboxTool.run(
            ["serve", "--port", "0", "--in-memory-keys", "--retention", "1e300"], stopAfter: .seconds(20))
        Self.expectUsageError(run, option: "--retention")
    }

    @Test("outbox serve --idle-timeout 1e10 is a usage error, not a crash")
    func serveIdleTimeout() async throws {
        let run = try await OutboxTool.run(
            ["serve", "--port", "0", "--in-memory-keys", "--idle-timeout", "1e10"], stopAfter: .seconds(20))
        Self.expectUsageError(run, option: "--idle-timeout")
    }

    @Test("outbox drain --key-retention 1e300 on an existing queue is a usage error, not a crash")
    func drainKeyRetention() async throws {
        // The conversion was made only once the queue was open: it must exist.
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-huge-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await LogOutboxStore.open(root: root, partition: "default").close()
        let run = try await OutboxTool.run(
            ["drain", root, "--base-url", "http://127.0.0.1:9", "--key-retention", "1e300"], stopAfter: .seconds(20))
        Self.expectUsageError(run, option: "--key-retention")
    }

    @Test("the duration forms still parse: 500ms, 90s, 15m, 24h, 7d and plain seconds; 100 years is the limit", arguments: [
        ("500ms", true), ("90s", true), ("15m", true), ("24h", true), ("7d", true), ("30", true), ("0.5", true),
        ("36500d", true), ("36501d", false), ("3153600001", false), ("-1s", false), ("nan", false), ("infs", false), ("abc", false),
    ])
    func durationForms(text: String, accepted: Bool) async throws {
        // --debug-exit-with-parent: a serve that starts ends with this test process, whatever happens.
        let run = try await OutboxTool.run(
            ["serve", "--port", "0", "--in-memory-keys", "--debug-exit-with-parent", "--retention", text], stopAfter: .seconds(3))
        if accepted {
            #expect(run.stopped, "--retention \(text) should be accepted and serve: \(run.status) \(run.stderr)")
        } else {
            Self.expectUsageError(run, option: "--retention")
        }
    }

    static func expectUsageError(_ run: OutboxTool.Run, option: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!run.stopped, "still running: the value was accepted", sourceLocation: sourceLocation)
        #expect(run.status == 64, "\(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stderr.contains(option), "\(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stderrLines.count == 1, "\(run.stderr)", sourceLocation: sourceLocation)
    }
}
