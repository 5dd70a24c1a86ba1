import Dispatch
import Foundation
import OutboxLog
import OutboxLogTesting
import OutboxLocking
import SystemPackage
import Testing

@Suite("Crashing file system")
struct CrashingFileSystemTests {
    @Test("crash() returns only once the calls already inside the disk have finished")
    func crashWaitsForCallsInFlight() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Holds the first rename inside the disk until released.
        let holding = Locked(true)
        let gate = HookedFileSystem(base: disk) { operation in
            guard operation == .rename, holding.withLock({ $0 }) else { return }
            holding.withLock { $0 = false }
            entered.signal()
            release.wait()
        }
        let crashing = CrashingFileSystem(base: gate, crashAt: nil)
        try crashing.close(crashing.openFile("/data/a", mode: .createNew))

        // The orchestration blocks: run it on threads of its own.
        let crashReturnedEarly: Bool = await withCheckedContinuation { continuation in
            Thread {
                let renamed = DispatchSemaphore(value: 0)
                Thread {
                    try? crashing.rename("/data/a", to: "/data/b")  // a compaction's rename, say
                    renamed.signal()
                }.start()
                entered.wait()
                let crashReturned = DispatchSemaphore(value: 0)
                Thread {
                    crashing.crash()  // the process dies while the rename is inside the disk
                    crashReturned.signal()
                }.start()
                while !crashing.hasCrashed { sched_yield() }
                for _ in 0..<1000 { sched_yield() }
                let early = crashReturned.wait(timeout: .now()) == .success
                release.signal()
                renamed.wait()
                if !early { crashReturned.wait() }
                continuation.resume(returning: early)
            }.start()
        }
        #expect(!crashReturnedEarly, "crash() returned while a call was still changing the disk")
        // The rename happened before the death; nothing happens after it.
        #expect(disk.contents(of: "/data/b") != nil)
        #expect(throws: Errno.self) { try crashing.rename("/data/b", to: "/data/c") }
        #expect(disk.contents(of: "/data/b") != nil)
    }
}
