import CLITestSupport
import Foundation
import SystemPackage
import Testing

@testable import OutboxTorture

/// Real system calls failing under libfiu (`fiu-run`, package fiu-utils):
/// the worker's `pwrite`/`fdatasync` fail inside the kernel interface, not
/// in a simulation. Skipped, saying so, only when `fiu-run` is missing;
/// `.ci/run` installs it.
@Suite("Torture, real syscall faults (libfiu)", .serialized)
struct LibfiuTests {
    @Test(
        "a real pwrite or fdatasync failure poisons the log and loses nothing acknowledged",
        .enabled(if: LibfiuTorture.fiuRun != nil, "fiu-run is not installed (apt-get install fiu-utils): libfiu runs skipped"))
    func realSyscallFaults() async throws {
        let executable = try #require(OutboxTool.executable, "build the outbox binary first: swift build --build-tests")
        let fiuRun = try #require(LibfiuTorture.fiuRun)
        let root = FileManager.default.temporaryDirectory.path + "/outbox-libfiu-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Probabilities high enough that every run meets a fault early.
        var torture = LibfiuTorture(
            executable: executable.path, fiuRun: fiuRun, root: FilePath(root),
            points: [
                .init(name: "posix/io/rw/pwrite", probability: 50...100),
                .init(name: "posix/io/sync/fdatasync", probability: 100...200),
            ])
        var report = TortureReport(seed: 61)
        for _ in 0..<4 {
            let passed = await torture.cycle(seed: 61, report: &report)
            #expect(passed, "\(report.text)")
            if !passed { break }
        }
        let counts = report[.iofault]
        #expect(report.violations.isEmpty, "\(report.text)")
        #expect(counts.cycles == 4)
        #expect(counts.faults >= 3, "libfiu injected no fault into the Swift binary:\n\(report.text)")
        #expect(counts.acknowledged > 0)
        #expect((counts.details["libfiu: poisoned logs refused the next append"] ?? 0) > 0, "\(report.text)")
    }
}
