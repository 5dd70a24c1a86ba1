import CLITestSupport
import Foundation
import OutboxTorture
import SystemPackage
import Testing

/// Runs the torture driver from a test: a scratch directory of its own,
/// the built `outbox` binary as the worker, and the checks every profile
/// test makes — the run found no violation *and* did real work.
enum TortureHarness {
    /// The seed of the random-seed runs (``TestSeed``: `OUTBOX_TEST_SEED`,
    /// or drawn), printed so a failure can be replayed by the test or by
    /// `outbox torture --seed`.
    static let randomSeed: UInt64 = {
        let seed = TestSeed.take(for: "torture tests")
        print("torture tests: the same run by hand: outbox torture --seed \(seed)")
        return seed
    }()

    static func run(_ modes: [TortureMode], seed: UInt64, cycles: Int, libfiu: Bool = false) async throws -> TortureReport {
        let directory = FileManager.default.temporaryDirectory.path + "/outbox-torture-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let executable = try #require(OutboxTool.executable, "build the outbox binary first: swift build --build-tests")
        var options = TortureOptions(
            seed: seed, modes: modes, cycles: cycles, directory: FilePath(directory), workerExecutable: executable.path)
        options.libfiu = libfiu
        return await Torture.run(options)
    }

    /// No violation, and `mode` ran cycles, injected faults, and checked
    /// what it recovered (and, except for corruption, acknowledged writes).
    static func expectClean(_ report: TortureReport, _ mode: TortureMode, sourceLocation: SourceLocation = #_sourceLocation) {
        let counts = report[mode]
        #expect(report.violations.isEmpty, "seed \(report.seed):\n\(report.text)", sourceLocation: sourceLocation)
        #expect(counts.cycles > 0, "no \(mode) cycle completed:\n\(report.text)", sourceLocation: sourceLocation)
        #expect(counts.faults > 0, "no fault injected:\n\(report.text)", sourceLocation: sourceLocation)
        #expect(counts.recovered > 0, "nothing recovered was checked:\n\(report.text)", sourceLocation: sourceLocation)
        if mode != .corrupt {
            #expect(counts.acknowledged > 0, "nothing acknowledged:\n\(report.text)", sourceLocation: sourceLocation)
        }
    }
}
