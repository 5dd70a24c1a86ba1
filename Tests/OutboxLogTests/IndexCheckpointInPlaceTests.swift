import OutboxLog
import OutboxLogTesting
import Testing

/// Periodic index checkpoints bound what a killed process re-reads at its
/// next open. They must also be written when every append is
/// written in place by its caller and the writer thread never
/// runs a batch of its own.
@Suite("Index checkpoint with writes in place")
struct IndexCheckpointInPlaceTests {
    @Test("written appends done in place still write the periodic checkpoint a reopen after a kill uses")
    func periodicCheckpointWithWritesInPlace() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        var configuration = simulatedConfiguration(disk, segmentSize: 1 << 20)
        configuration.writesInPlace = true
        configuration.indexCheckpoints = true
        configuration.indexCheckpointInterval = 4096
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        var model: LogModel = [:]
        // Ten rounds of 20 records of about 230 bytes (more than the interval
        // each), all in one segment. Between rounds no checkpoint is running:
        // one that runs while a whole round is written would leave that round
        // to the next check, and the assertion below would depend on timing.
        for round in 0..<10 {
            for index in (round * 20)..<(round * 20 + 20) {
                let key = LogKey("key-\(index)")
                let value = [UInt8].pattern(200, seed: index)
                try await log.put(key, value, durability: .written)
                model[key] = (value, nil)
            }
            await log.waitForBackgroundCompaction()
        }
        disk.simulateProcessCrash()

        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        // A checkpoint starts once an interval (about 18 records) was written
        // after the last one began, and none is running at a round's start.
        let covered = try #require(reopened.recoveryReport.indexCheckpoint)
        #expect(covered >= 150)
        try await expectLog(reopened, equals: model)
        try await reopened.close()
    }
}
