import CLITestSupport
import Foundation
import Testing

/// `outbox serve --fault NAME=RATE` refuses what it cannot inject, before
/// it listens.
@Suite("outbox serve --fault", .timeLimit(.minutes(5)))
struct ServeFaultOptionTests {
    @Test("unknown faults, bad rates, a sum past 0.9 and --fault with --fault-rate exit 64 with one line", arguments: [
        ["--fault", "bogus=0.1"],
        ["--fault", "dropAfterApply"],
        ["--fault", "dropAfterApply=1.5"],
        ["--fault", "dropAfterApply=0.5", "--fault", "serverError=0.5"],
        ["--fault", "halfOpen=0.1", "--fault-rate", "0.2"],
    ])
    func refused(arguments: [String]) async throws {
        let run = try await OutboxTool.run(["serve", "--port", "0", "--in-memory-keys"] + arguments)
        #expect(run.status == 64)
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }
}
