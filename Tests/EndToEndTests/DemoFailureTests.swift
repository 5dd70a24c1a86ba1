import CLITestSupport
import Foundation
import Testing

/// `outbox demo` ends, with a ledger and a non-zero exit, when it cannot finish.
@Suite("outbox demo failure paths", .serialized, .timeLimit(.minutes(5)))
struct DemoFailureTests {
    @Test("a server that rejects everything: the deadline ends the demo with exit 1, one error line and the ledger of what remained")
    func deadlinePassed() async throws {
        let run = try await OutboxTool.run([
            "demo", "--count", "10", "--seed", "3", "--deadline", "2", "--debug-reject-everything", "--json",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let errors = run.stderrLines.filter { $0.hasPrefix("error: ") }
        #expect(errors.count == 1, "\(run.stderr)")
        #expect(errors.first?.hasPrefix("error: demo did not finish: the deadline of 2 s passed with ") == true, "\(run.stderr)")
        let line = try #require(run.stdoutLines.last)
        let ledger = try #require(OutboxTool.jsonObject(line), "\(run.stdout)")
        let remaining = try #require(ledger["remaining"] as? Int)
        #expect(remaining > 0)
        // Nothing got through: every recorded write is still queued.
        let enqueued = try #require(ledger["enqueued"] as? Int)
        let coalesced = try #require(ledger["coalesced"] as? Int)
        #expect(remaining == enqueued - coalesced)
        #expect((ledger["failure"] as? String)?.contains("deadline of 2 s passed with \(remaining) write(s) unsent") == true)
        #expect((ledger["violations"] as? [String])?.first?.hasPrefix("did not finish:") == true)
        #expect(ledger["delivered"] as? Int == 0)
        #expect((ledger["lost"] as? [Any])?.isEmpty == true, "queued writes are not reported lost")
        // Every attempt met the server's refusal. How many fit in the 2 s
        // depends on the machine's load (none, on two busy cores), so the
        // count is checked against the client's, not against a number: the
        // server served a 503 for every retry the client counted, and
        // perhaps one more whose answer the deadline cut off.
        let faults = ledger["faults"] as? [String: Int] ?? [:]
        #expect(faults.filter { $0.value > 0 }.keys.allSatisfy { $0 == "serverError" }, "\(faults)")
        let retries = try #require(ledger["retries"] as? Int)
        #expect((faults["serverError"] ?? 0) >= retries, "\(faults), \(retries) retries")
    }

    @Test("a store failing under the dispatcher ends the demo with exit 1 and one error line, not a hang")
    func storeFails() async throws {
        let run = try await OutboxTool.run([
            "demo", "--count", "40", "--fault-rate", "0", "--deadline", "60", "--debug-fail-disk-after-restart", "--json",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let errors = run.stderrLines.filter { $0.hasPrefix("error: ") }
        #expect(errors.count == 1, "\(run.stderr)")
        let error = try #require(errors.first)
        #expect(error.hasPrefix("error: demo did not finish: the outbox failed: ") || error.hasPrefix("error: demo did not finish: the dispatcher failed: "), "\(error)")
        #expect(!error.contains("deadline"))
        #expect(run.stderrLines.contains { $0.contains("app killed") })
        let last = try #require(run.stdoutLines.last)
        let ledger = try #require(OutboxTool.jsonObject(last))
        #expect(ledger["failure"] as? String != nil)
        #expect((ledger["appliedTwice"] as? [Any])?.isEmpty == true)
    }

    @Test("the text ledger says FAILED and what remained")
    func deadlineText() async throws {
        let run = try await OutboxTool.run(["demo", "--count", "10", "--deadline", "1", "--debug-reject-everything"])
        #expect(run.status == 1)
        #expect(run.stdoutLines.contains { $0.hasPrefix("FAILED: did not finish: the deadline of 1 s passed") }, "\(run.stdout)")
        #expect(run.stdoutLines.contains { $0.contains("remaining") && $0.contains("still queued when the demo stopped") }, "\(run.stdout)")
        #expect(run.stderrLines.contains { $0.hasPrefix("error: demo did not finish:") })
    }

    @Test("a bad --deadline is a usage error")
    func badDeadline() async throws {
        let run = try await OutboxTool.run(["demo", "--deadline", "0"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--deadline"))
    }
}
