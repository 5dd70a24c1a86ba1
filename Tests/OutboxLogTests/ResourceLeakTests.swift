import Foundation
import OutboxLocking
import OutboxLogTesting
import SystemPackage
import Testing

@testable import OutboxLog

/// Descriptors and threads the engine owns: released on every failure path,
/// and blocking I/O never on the caller's thread.
@Suite("Engine resources")
struct ResourceLeakTests {
    @Test("a segment roll whose directory sync fails leaves no descriptor of the new segment open")
    func failedRollLeaksNoDescriptor() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        try await log.put("first", .pattern(100, seed: 1), durability: .durable)
        // The next roll: header written under .tmp, renamed, then the
        // directory sync fails.
        disk.faults.install(.nthCall(1, of: .synchronizeDirectory))
        await #expect(throws: OutboxLogError.self) {
            for i in 0..<200 { try await log.put(LogKey("k\(i)"), .pattern(100, seed: i), durability: .written) }
        }
        #expect(disk.faults.injectedFaults.count == 1)
        _ = try? await log.close()
        let leaked = disk.openFilePaths.filter { $0.string.hasSuffix(".tmp") }
        #expect(leaked.isEmpty, "descriptors left open: \(leaked)")
    }

    @Test("after shutdown the reader pool refuses work instead of running it on the caller's thread")
    func poolRefusesAfterShutdown() async throws {
        let pool = BlockingThreadPool(threads: 1, name: "outbox-test-pool")
        let onPool = try await pool.run { () throws(OutboxLogError) -> String in currentThreadName() }
        #expect(onPool.hasPrefix("outbox-test-poo"))
        pool.shutdown()
        let ran = Locked(false)
        await #expect {
            try await pool.run { () throws(OutboxLogError) in ran.withLock { $0 = true } }
        } throws: { error in
            (error as? OutboxLogError)?.code == .closed
        }
        #expect(!ran.value, "a job submitted after shutdown ran on the caller's thread")
    }
}

/// The operating system's name of the calling thread (Foundation's
/// `Thread.current.name` does not read it on Linux).
func currentThreadName() -> String {
    #if os(Linux)
    let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return comm.trimmingCharacters(in: .whitespacesAndNewlines)
    #else
    return Thread.current.name ?? ""
    #endif
}
