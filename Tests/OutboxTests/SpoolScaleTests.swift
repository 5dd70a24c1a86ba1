import Foundation
import Outbox
import OutboxLog
import OutboxLogTesting
import Synchronization
import SystemPackage
import Testing

/// Many spools at once: a queue held while a writer spooled one batch at a
/// time (or an extension wrote many times while the app was not running)
/// has hundreds or thousands of them at its next look.
@Suite("Spools in large numbers")
struct SpoolScaleTests {
    /// Counts the descriptors open through it, and the most at once.
    final class DescriptorCounter: ForwardingFileSystem, @unchecked Sendable {
        let base: any FileSystem
        private let counts = Mutex((open: 0, peak: 0))

        init(_ base: any FileSystem) { self.base = base }

        var open: Int { counts.withLock { $0.open } }
        var peak: Int { counts.withLock { $0.peak } }
        func resetPeak() { counts.withLock { $0.peak = $0.open } }

        func intercept<T>(
            _ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T
        ) throws(Errno) -> T {
            switch operation {
            case .openFile:
                let result = try call()
                counts.withLock {
                    $0.open += 1
                    $0.peak = max($0.peak, $0.open)
                }
                return result
            case .close:
                // A close releases the descriptor even when it reports an error.
                defer { counts.withLock { $0.open -= 1 } }
                return try call()
            default:
                return try call()
            }
        }
    }

    @Test("a look at 40 spools holds about one descriptor per spool, and moves every entry in")
    func descriptorsPerSpool() async throws {
        let counter = DescriptorCounter(SimulatedFileSystem())
        var configuration = SpoolTests.configuration(counter)
        configuration.enqueueDurability = .written
        let owner = try await SpoolTests.open(configuration)
        let spools = 40
        for index in 0..<spools {
            let result = try await LogOutboxStore.enqueue(
                [SpoolTests.request("entry \(index)")], root: SpoolTests.root, partition: "alice", configuration: configuration)
            guard case .spooled = result else { Issue.record("not spooled: \(result)"); return }
        }
        let before = counter.open
        counter.resetPeak()
        let report = try await owner.ingestSpools()
        #expect(report.ingested == spools && report.spoolsDeleted == spools && report.problems.isEmpty, "\(report)")
        // Each spool's guard is held until the spool is deleted; its log
        // (lock and segment) only while it is read.
        #expect(counter.peak - before <= spools + 8, "peak \(counter.peak), before \(before)")
        #expect(try await owner.summary().unsent == spools)
        try await owner.close()
    }
}
