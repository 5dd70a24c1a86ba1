import OutboxLog
import OutboxLogTesting
import OutboxQueue
import SystemPackage
import Testing

@Suite("Queue: trimming what every consumer read")
struct QueueRetentionTests {
    static func smallSegments(_ disk: SimulatedFileSystem) -> DurableQueue.Configuration {
        var configuration = QueuePowerLossTests.configuration(disk)
        configuration.elements.segmentSize = 4096
        return configuration
    }

    static func element(_ i: Int) -> [UInt8] { bytes("element-\(i)-" + String(repeating: "x", count: 100)) }

    @Test("segments every consumer committed past go; what the slowest has not committed stays and is read on")
    func slowestConsumerHolds() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await DurableQueue.open(at: QueuePowerLossTests.directory, configuration: Self.smallSegments(disk))
        let fast = try await queue.consumer(named: "fast")
        let slow = try await queue.consumer(named: "slow")
        var positions: [QueuePosition] = []
        for i in 0..<100 { positions.append(try await queue.append(Self.element(i))) }
        try await fast.commit(through: positions[90])
        try await slow.commit(through: positions[40])
        let report = try await queue.trim()
        #expect(report.segmentsRemoved > 0, "100 elements of ~150 bytes in 4 KiB segments, 41 consumed by both: \(report)")
        #expect(report.elementsRemoved <= 41, "an element the slow consumer has not committed was removed: \(report)")
        let slowRead = try await drain(slow)
        #expect(slowRead.map(\.position) == Array(positions[41...]), "the slow consumer lost or skipped elements")
        let fastRead = try await drain(fast)
        #expect(fastRead.map(\.position) == Array(positions[91...]))
        // A consumer made now starts at the oldest element still there.
        let late = try await drain(try await queue.consumer(named: "late"))
        #expect(late.first.map { $0.position > positions[0] && $0.position <= positions[41] } == true)
        #expect(late.map(\.position) == positions.filter { $0 >= late[0].position })
        try await queue.close()
    }

    @Test("with no consumer, or one that committed nothing, nothing is removed")
    func nothingWithoutCommits() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await DurableQueue.open(at: QueuePowerLossTests.directory, configuration: Self.smallSegments(disk))
        for i in 0..<60 { try await queue.append(Self.element(i)) }
        #expect(try await queue.trim().segmentsRemoved == 0)
        let idle = try await queue.consumer(named: "idle")
        #expect(try await queue.trim().segmentsRemoved == 0)
        #expect(try await drain(idle).count == 60)
        try await queue.close()
    }

    @Test("a buffered commit is synced before the removal: after a power loss the consumer reads on after it, with no gap")
    func commitsAreSyncedFirst() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await DurableQueue.open(at: QueuePowerLossTests.directory, configuration: Self.smallSegments(disk))
        let consumer = try await queue.consumer(named: "c")
        var positions: [QueuePosition] = []
        for i in 0..<60 { positions.append(try await queue.append(Self.element(i), durability: .durable)) }
        try await consumer.commit(through: positions[39], durability: .buffered)
        #expect(try await queue.trim().segmentsRemoved > 0)
        disk.simulatePowerLoss(.dropUnsynced)
        _ = try? await queue.close()

        let reopened = try await DurableQueue.open(at: QueuePowerLossTests.directory, configuration: Self.smallSegments(disk))
        let again = try await reopened.consumer(named: "c")
        #expect(again.committed == positions[39], "the commit the removal relied on was lost")
        #expect(try await drain(again).map(\.position) == Array(positions[40...]))
        try await reopened.close()
    }
}
