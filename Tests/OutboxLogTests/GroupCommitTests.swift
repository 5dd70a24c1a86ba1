import Dispatch
import Foundation
import OutboxLog
import OutboxLogTesting
import OutboxLocking
import SystemPackage
import Testing

/// Group commit: durable appends that arrive while a sync is running share
/// the next one, in groups no larger than `groupCommitLimit`.
@Suite("Group commit")
struct GroupCommitTests {
    @Test("statistics read on a thread of its own while the writer thread writes: the written sequence never goes backwards, never passes the next, and ends at the last append")
    func statisticsWhileWriting() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        // The reader runs throughout the appends and takes no lock the
        // writer thread takes except the log's own (StatisticsReader): the
        // statistics must come from the writer's locked state, or
        // ThreadSanitizer reports the race on every run.
        let reader = await StatisticsReader.start(log)
        var last: UInt64 = 0
        for i in 0..<400 { last = try await log.put(LogKey("k\(i % 50)"), [UInt8](repeating: UInt8(i % 256), count: 64), durability: .written) }
        let readings = await reader.stop()
        #expect(readings.count >= 2)
        #expect(readings.backwards.isEmpty, "the written sequence went backwards: \(readings.backwards.prefix(5))")
        #expect(readings.beyondNext.isEmpty, "written at or past the next sequence: \(readings.beyondNext.prefix(5))")
        #expect(readings.last.map { $0.writtenSequence <= last } == true)
        #expect(log.statistics.writtenSequence == last)
        try await log.close()
    }

    @Test("64 concurrent durable appends share a few syncs, and no group exceeds groupCommitLimit")
    func appendsShareSyncs() async throws {
        let disk = GatedSyncFileSystem(base: SimulatedFileSystem(directories: ["/data"]))
        var configuration = simulatedConfiguration(disk, segmentSize: 1 << 20)
        configuration.groupCommitLimit = 4096
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        try await log.put("first", [0], durability: .durable)
        let before = disk.counts

        // Hold the next sync: everything appended meanwhile queues behind it.
        disk.holdSyncs()
        let first = log.statistics.nextSequence
        let appends = Task {
            await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<64 {
                    group.addTask { try await log.put(LogKey("k\(i)"), [UInt8](repeating: UInt8(i), count: 100), durability: .durable) }
                }
            }
        }
        while log.statistics.nextSequence < first + 64 { await Task.yield() }  // all 64 are encoded
        disk.releaseSyncs()
        try await appends.value

        let after = disk.counts
        let syncs = after.syncs - before.syncs
        #expect(syncs >= 1)
        #expect(syncs <= 6, "64 appends of ~130 bytes in groups of ≤4 KiB need 3–4 syncs, got \(syncs)")
        #expect(after.largestWrite <= 4096)
        #expect(log.statistics.durableSequence >= first + 63)
        for i in [0, 31, 63] { #expect(try await log.get(LogKey("k\(i)"))?.value.count == 100) }
        try await log.close()
    }
}

extension GroupCommitTests {
    @Test("after a burst of concurrent producers, sequential durable appends still get one sync each")
    func sequentialAppendsNeverWaitForCompany() async throws {
        let disk = GatedSyncFileSystem(base: SimulatedFileSystem(directories: ["/data"]))
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
        // A burst of concurrent producers first, so the writer has seen big groups.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 { group.addTask { try await log.put(LogKey("burst\(i)"), [1], durability: .durable) } }
            try await group.waitForAll()
        }
        let before = disk.counts.syncs
        for i in 0..<20 {
            try await log.put(LogKey("one\(i)"), [2], durability: .durable)
            #expect(log.statistics.durableSequence == log.statistics.nextSequence - 1)
        }
        #expect(disk.counts.syncs - before == 20)
        try await log.close()
    }
}

/// Passes everything to `base`, but can hold `synchronize` calls (on the
/// engine's writer thread) until released; counts syncs and write sizes.
final class GatedSyncFileSystem: ForwardingFileSystem, Sendable {
    let base: any FileSystem
    private let state = Locked((held: false, syncs: 0, largestWrite: 0))
    private let gate = DispatchSemaphore(value: 0)

    init(base: any FileSystem) { self.base = base }

    var counts: (syncs: Int, largestWrite: Int) { state.withLock { ($0.syncs, $0.largestWrite) } }

    func holdSyncs() { state.withLock { $0.held = true } }

    func releaseSyncs() {
        let wasHeld = state.withLock { state -> Bool in
            defer { state.held = false }
            return state.held
        }
        if wasHeld { gate.signal() }
    }

    func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        let held = state.withLock { state -> Bool in
            state.syncs += 1
            return state.held
        }
        if held { gate.wait() }
        try base.synchronize(descriptor)
    }

    func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        state.withLock { $0.largestWrite = max($0.largestWrite, bytes.count) }
        return try base.write(descriptor, bytes, at: offset)
    }

}
