import Foundation
import OutboxLocking
import OutboxLog
import OutboxLogTesting
import OutboxQueue
import SystemPackage
import Testing

/// Retention by age and by size (``QueueRetention``), which consumers the
/// limits wait for, what a trim reports, and removing a consumer.
@Suite("Queue: age and size limits, and removed consumers")
struct QueueLimitsTests {
    /// A clock the test moves by hand.
    final class Clock: Sendable {
        private let now = Locked(Date(timeIntervalSince1970: 1_000_000))
        var date: Date { now.withLock { $0 } }
        func advance(by seconds: Double) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    static func configuration(
        _ disk: SimulatedFileSystem, _ retention: QueueRetention, clock: Clock = Clock()
    ) -> DurableQueue.Configuration {
        var configuration = QueueRetentionTests.smallSegments(disk)
        configuration.retention = retention
        configuration.clock = { clock.date }
        return configuration
    }

    static func open(_ disk: SimulatedFileSystem, _ retention: QueueRetention, clock: Clock = Clock()) async throws -> DurableQueue {
        try await DurableQueue.open(at: QueuePowerLossTests.directory, configuration: configuration(disk, retention, clock: clock))
    }

    @Test("each element carries its append time, to the millisecond, also after a reopen")
    func appendTime() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let clock = Clock()
        var queue = try await Self.open(disk, QueueRetention(), clock: clock)
        try await queue.append(bytes("a"))
        clock.advance(by: 2.5)
        try await queue.append(bytes("b"), durability: .durable)
        for stage in ["as appended", "after a reopen"] {
            let read = try await drain(try await queue.consumer(named: "reader-\(stage)"))
            #expect(read.map(\.appendedAt) == [Date(timeIntervalSince1970: 1_000_000), Date(timeIntervalSince1970: 1_000_002.5)], "\(stage)")
            try await queue.close()
            queue = try await Self.open(disk, QueueRetention(), clock: clock)
        }
        try await queue.close()
    }

    @Test("with no consumer, elements older than the age go, whole segments at a time; younger ones stay")
    func ageWithoutConsumers() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let clock = Clock()
        let queue = try await Self.open(disk, QueueRetention(maximumAge: .seconds(60)), clock: clock)
        var positions: [QueuePosition] = []
        for i in 0..<60 { positions.append(try await queue.append(QueueRetentionTests.element(i))) }
        clock.advance(by: 30)
        for i in 60..<120 { positions.append(try await queue.append(QueueRetentionTests.element(i))) }
        #expect(try await queue.trim() == QueueTrimReport(), "nothing is a minute old yet")
        clock.advance(by: 31)
        let report = try await queue.trim()
        #expect(report.segmentsRemoved > 0 && report.elementsRemoved <= 60, "\(report)")
        #expect(report.overtaken.isEmpty && report.heldBackBy.isEmpty)
        let left = try await drain(try await queue.consumer(named: "late"))
        #expect(left.map(\.position) == Array(positions[(120 - left.count)...]))
        #expect(left.count >= 60, "an element younger than a minute was removed")
        #expect(120 - left.count == report.elementsRemoved)
        try await queue.close()
    }

    @Test("a consumer the limits wait for keeps what it has not committed, and is named; one they pass is overtaken and reads on")
    func holdersAndOvertaken() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let retention = QueueRetention(maximumBytes: 0, heldBy: .consumers(["billing"]))
        let queue = try await Self.open(disk, retention)
        let billing = try await queue.consumer(named: "billing")
        let analytics = try await queue.consumer(named: "analytics")
        var positions: [QueuePosition] = []
        for i in 0..<100 { positions.append(try await queue.append(QueueRetentionTests.element(i))) }
        try await analytics.commit(through: positions[9])
        try await billing.commit(through: positions[49])
        let report = try await queue.trim()
        let below = try #require(report.removedBelow)
        #expect(below > positions[10] && below <= positions[50], "\(report)")
        #expect(report.heldBackBy == ["billing"], "\(report)")
        #expect(report.overtaken == [.init(consumer: "analytics", committed: positions[9], readsOnFrom: below)], "\(report)")
        #expect(try await drain(billing).map(\.position) == Array(positions[50...]), "billing lost an element it had not committed")
        let read = try await drain(analytics)
        #expect(read.first?.position == positions.first { $0 >= below })
        #expect(read.map(\.position) == positions.filter { $0 >= below })
        try await queue.close()
    }

    @Test("by default the limits wait for every consumer: nothing uncommitted is lost, and the laggard is named")
    func everyConsumerHolds() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await Self.open(disk, QueueRetention(maximumBytes: 0))
        let lagging = try await queue.consumer(named: "lagging")
        let quick = try await queue.consumer(named: "quick")
        var positions: [QueuePosition] = []
        for i in 0..<100 { positions.append(try await queue.append(QueueRetentionTests.element(i))) }
        try await quick.commit(through: positions[99])
        let report = try await queue.trim()
        #expect(report.segmentsRemoved == 0 && report.overtaken.isEmpty, "\(report)")
        #expect(report.heldBackBy == ["lagging"])
        #expect(try await drain(lagging).count == 100)
        try await queue.close()
    }

    @Test("a removed consumer holds nothing back, its object refuses, and its name starts anew")
    func removedConsumer() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await Self.open(disk, QueueRetention())
        let gone = try await queue.consumer(named: "gone")
        let stays = try await queue.consumer(named: "stays")
        var positions: [QueuePosition] = []
        for i in 0..<100 { positions.append(try await queue.append(QueueRetentionTests.element(i))) }
        try await stays.commit(through: positions[79])
        #expect(try await queue.trim().segmentsRemoved == 0, "held by the consumer that committed nothing")
        #expect(try await queue.removeConsumer(named: "gone"))
        #expect(try await !queue.removeConsumer(named: "gone"), "removed already")
        #expect(try await !queue.removeConsumer(named: "never"))
        for refused in [
            await #expect(throws: QueueError.self) { try await gone.commit(through: positions[0]) },
            await #expect(throws: QueueError.self) { _ = try await gone.next() },
        ] {
            #expect(refused?.code == .removed)
        }
        #expect(try await queue.trim().segmentsRemoved > 0)
        let again = try await queue.consumer(named: "gone", startingAt: .end)
        #expect(again !== gone)
        #expect(again.committed == positions[99])
        try await queue.close()
        // Durable: after a power loss it is still gone, then as made anew.
        disk.simulatePowerLoss(.dropUnsynced)
        let reopened = try await Self.open(disk, QueueRetention())
        #expect(try await reopened.consumer(named: "gone").committed == positions[99])
        try await reopened.close()
    }

    @Test("a consumer named with other bytes than a holder's name is not held for, whatever Swift's string equality says")
    func holdersByBytes() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed, "the two spellings Swift calls equal")
        let queue = try await Self.open(disk, QueueRetention(maximumBytes: 0, heldBy: .consumers([decomposed])))
        let held = try await queue.consumer(named: decomposed)
        let passed = try await queue.consumer(named: composed)
        var positions: [QueuePosition] = []
        for i in 0..<100 { positions.append(try await queue.append(QueueRetentionTests.element(i))) }
        try await held.commit(through: positions[49])
        let report = try await queue.trim()
        #expect(report.heldBackBy == [decomposed] && report.overtaken.map(\.consumer) == [composed], "\(report)")
        #expect(try await drain(held).map(\.position) == Array(positions[50...]))
        #expect(try await drain(passed).first.map { $0.position > positions[0] } == true)
        try await queue.close()
    }

    @Test("the age limit waits for a consumer in the segment being appended to too, and names it")
    func heldInTheActiveSegment() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let clock = Clock()
        let queue = try await Self.open(disk, QueueRetention(maximumAge: .seconds(1)), clock: clock)
        let idle = try await queue.consumer(named: "idle")
        for i in 0..<3 { try await queue.append(QueueRetentionTests.element(i)) }
        clock.advance(by: 10)
        let report = try await queue.trim()
        #expect(report.segmentsRemoved == 0 && report.heldBackBy == ["idle"], "\(report)")
        #expect(try await drain(idle).count == 3)
        try await queue.close()
    }

    @Test("the log's own time retention finds nothing to remove in a queue: append times are not expiries")
    func logRetentionLeavesElements() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        var queue = try await Self.open(disk, QueueRetention())
        for i in 0..<100 { try await queue.append(QueueRetentionTests.element(i)) }
        try await queue.close()
        let log = try await OutboxLog.open(
            at: QueuePowerLossTests.directory.appending("elements"), configuration: Self.configuration(disk, QueueRetention()).elements)
        #expect(try await log.removeExpired(now: .distantFuture) == RetentionReport())
        try await log.close()
        queue = try await Self.open(disk, QueueRetention())
        #expect(try await drain(try await queue.consumer(named: "reader")).count == 100)
        try await queue.close()
    }

    @Test("a negative age or size is refused at the open")
    func refusedLimits() async throws {
        for retention in [QueueRetention(maximumAge: .seconds(-1)), QueueRetention(maximumBytes: -1)] {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let error = await #expect(throws: QueueError.self) { try await Self.open(disk, retention) }
            #expect(error?.code == .invalidArgument)
        }
    }
}
