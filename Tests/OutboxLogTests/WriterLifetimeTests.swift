import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Which files the writer thread keeps open, and for how long.
///
/// Found under AddressSanitizer's timing (Scripts/sanitize.sh): the writer
/// thread's closure held the segment it started with for the thread's whole
/// life, and its last segment file was released — its descriptor closed —
/// only after `close()` had been told the writer was done.
@Suite("Writer lifetime")
struct WriterLifetimeTests {
    /// Values that fill a little over a third of a 4 KiB segment: two per segment.
    static func big(_ seed: Int) -> [UInt8] { .pattern(1500, seed: seed) }

    @Test("a segment compaction removes is closed while the log stays open, though the writer thread started with it")
    func deletedStartingSegmentIsClosed() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let configuration = simulatedConfiguration(disk)
        let first = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        try await first.put("a", Self.big(0), durability: .durable)
        try await first.close()

        // Reopened, the writer thread starts with that segment as its target;
        // overwriting "a" rolls past it and leaves nothing live in it. The
        // last segment holds only live records, so compaction leaves it be
        // (the writer may hold the segment it appends to, and only that).
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        for seed in 1..<6 { try await log.put("a", Self.big(seed), durability: .durable) }
        for key in ["b", "c"] { try await log.put(LogKey(key), Self.big(9), durability: .durable) }
        let report = try await log.compact()
        #expect(report.inputSegments >= 1)
        // A file deleted (or replaced) while a descriptor on it stays open
        // keeps its disk space until the log is closed.
        #expect(disk.openFilesWithoutName == [], "a segment compaction removed is still open")

        try await log.close()
        // close() promises that the log touches no file after it returns:
        // the writer's last segment is closed before, not just after.
        #expect(disk.openFilePaths == [])
        withExtendedLifetime(log) {}
    }
}
