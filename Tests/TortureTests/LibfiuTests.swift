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

    /// A hung worker whose every thread waits inside libfiu (the stacks of
    /// a real hang, trimmed) is libfiu's deadlock; one thread anywhere else
    /// makes it a hang of ours, reported as a violation.
    @Test("a hang is put down to libfiu only when every thread is blocked inside it")
    func libfiuDeadlockIsRecognised() throws {
        let inLibfiu = """
            [New LWP 13806]
            Thread 3 (Thread 0x7f91 (LWP 13807) "-qos.overcommit"):
            #5  ___dlsym (handle=<optimized out>, name=<optimized out>) at ./dlfcn/dlsym.c:68
            #10 0x00007f91968b99ca in fiu_fail () from /lib/libfiu.so.0
            #11 0x00007f9197483692 in open () from /usr/lib/fiu/fiu_posix_preload.so
            Thread 1 (Thread 0x7f91 (LWP 13799) "outbox"):
            #6  0x00007f91968b99ca in fiu_fail () from /lib/libfiu.so.0
            #7  0x00007f919747a122 in malloc () from /usr/lib/fiu/fiu_posix_preload.so
            """
        let oneThreadOfOurs = inLibfiu + """

            Thread 4 (Thread 0x7f92 (LWP 13808) "outbox-writer"):
            #0  __futex_abstimed_wait_common () at ./nptl/futex-internal.c:57
            #1  OutboxLog.LogCore.writerLoop
            """
        // gdb lists the newest thread first, with no header before it.
        let oursFirst = """
            Thread 4 (Thread 0x7f92 (LWP 13808) "outbox-writer"):
            #0  __futex_abstimed_wait_common () at ./nptl/futex-internal.c:57
            """ + "\n" + inLibfiu.split(separator: "\n").dropFirst().joined(separator: "\n")
        let directory = FileManager.default.temporaryDirectory.path + "/outbox-stacks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = directory + "/a.stacks", second = directory + "/b.stacks"
        try inLibfiu.write(toFile: first, atomically: true, encoding: .utf8)
        try oneThreadOfOurs.write(toFile: second, atomically: true, encoding: .utf8)
        #expect(LibfiuTorture.deadlockedInLibfiu(stacks: FilePath(first)))
        #expect(!LibfiuTorture.deadlockedInLibfiu(stacks: FilePath(second)))
        let third = directory + "/c.stacks"
        try oursFirst.write(toFile: third, atomically: true, encoding: .utf8)
        #expect(!LibfiuTorture.deadlockedInLibfiu(stacks: FilePath(third)))
        #expect(!LibfiuTorture.deadlockedInLibfiu(stacks: FilePath(directory + "/missing.stacks")))
    }
}
