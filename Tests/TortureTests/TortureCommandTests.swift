import CLITestSupport
import Foundation
import Testing

/// `outbox torture`, run as the real binary.
@Suite("outbox torture command", .serialized)
struct TortureCommandTests {
    @Test("a clean run prints its seed and a report, and exits 0; --json gives the same report as JSON")
    func cleanRun() async throws {
        let text = try await OutboxTool.run(["torture", "--mode", "powerloss,iofault", "--cycles", "2", "--seed", "77", "--no-libfiu"])
        #expect(text.status == 0, "\(text.stdout)\n\(text.stderr)")
        #expect(text.stdout.contains("torture seed 77"))
        #expect(text.stdoutLines.last == "violations: 0")

        let json = try await OutboxTool.run(["torture", "--mode", "powerloss", "--cycles", "2", "--seed", "77", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let last = try #require(json.stdoutLines.last)
        let report = try #require(OutboxTool.jsonObject(last))
        #expect(report["seed"] as? UInt64 == 77 || report["seed"] as? Int == 77)
        let modes = try #require(report["modes"] as? [String: Any])
        let powerloss = try #require(modes["powerloss"] as? [String: Any])
        #expect(powerloss["cycles"] as? Int == 2)
        #expect((report["violations"] as? [Any])?.isEmpty == true)
    }

    @Test("without --seed, a random seed is chosen and printed")
    func randomSeedIsPrinted() async throws {
        let run = try await OutboxTool.run(["torture", "--mode", "powerloss", "--cycles", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        // "[   0.0s] torture seed 1234: powerloss" at the start, "torture seed 1234, 0.1 s" in the report.
        let seeds = run.stdoutLines.compactMap { line -> UInt64? in
            guard let range = line.range(of: "torture seed ") else { return nil }
            return UInt64(line[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(seeds.count == 2 && seeds[0] == seeds[1], "\(run.stdout)")
    }

    @Test("a violation exits 1 and names the seed that reproduces it")
    func violationExitsNonZero() async throws {
        // A worker that dies on its own at once is a violation of the kill loop.
        let run = try await OutboxTool.run(["torture", "--mode", "kill", "--cycles", "2", "--seed", "9", "--worker", "/bin/false"])
        #expect(run.status == 1)
        #expect(run.stdout.contains("VIOLATION kill seed 9 cycle 0"), "\(run.stdout)")
        #expect(run.stdout.contains("rerun with --seed 9"))
        #expect(run.stderr.contains("reproduce with --seed 9"))
    }

    @Test("bad arguments exit 64")
    func badArguments() async throws {
        #expect(try await OutboxTool.run(["torture", "--mode", "chaos"]).status == 64)
        #expect(try await OutboxTool.run(["torture", "--seconds", "0"]).status == 64)
    }
}
