import Logging
import OutboxLog
import OutboxLogTesting
import OutboxQueue
import SystemPackage
import Testing

/// What a power loss keeps of a queue, on the simulated file system.
@Suite("Queue: power loss")
struct QueuePowerLossTests {
    static func configuration(_ disk: SimulatedFileSystem) -> DurableQueue.Configuration {
        var configuration = DurableQueue.Configuration()
        let quiet = Logger(label: "queue-test", factory: { _ in SwiftLogNoOpLogHandler() })
        configuration.elements.fileSystem = disk
        configuration.elements.logger = quiet
        configuration.consumers.fileSystem = disk
        configuration.consumers.logger = quiet
        return configuration
    }

    static let directory: FilePath = "/data/queue"

    @Test("a durable commit makes the elements it covers durable first: after a power loss they and the commit are both there")
    func durableCommitCoversItsElements() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await DurableQueue.open(at: Self.directory, configuration: Self.configuration(disk))
        try await queue.append(bytes("kept"), durability: .written)
        try await queue.append(bytes("next"), durability: .written)
        let consumer = try await queue.consumer(named: "c")
        let first = try await consumer.next(max: 1)
        try await consumer.commit(through: first[0].position, durability: .durable)
        disk.simulatePowerLoss(.dropUnsynced)
        _ = try? await queue.close()

        let reopened = try await DurableQueue.open(at: Self.directory, configuration: Self.configuration(disk))
        let again = try await reopened.consumer(named: "c")
        #expect(again.committed == first[0].position, "the durable commit was lost or moved")
        // "next" may survive too (the sync before the commit took it along).
        let survivors = text(try await drain(try await reopened.consumer(named: "audit")))
        #expect(survivors.first == "kept", "the committed element did not survive: \(survivors)")
        try await reopened.append(bytes("after"))
        #expect(text(try await drain(again)) == survivors.dropFirst() + ["after"], "an element after the commit was skipped")
        try await reopened.close()
    }

    @Test("a commit that outlived its elements is brought back to their end at the open, so the next appends are read")
    func commitPastTheEndIsClamped() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let queue = try await DurableQueue.open(at: Self.directory, configuration: Self.configuration(disk))
        let position = try await queue.append(bytes("e0"), durability: .durable)
        _ = try await queue.consumer(named: "c")
        try await queue.close()
        // A commit far past the elements' end, as a buffered commit synced
        // by another consumer's could leave after a power loss.
        let consumers = try await OutboxLog.open(at: Self.directory.appending("consumers"), configuration: Self.configuration(disk).consumers)
        let past = position.rawValue + 100
        try await consumers.put(LogKey("c"), [1] + (0..<8).map { UInt8(truncatingIfNeeded: past >> (8 * $0)) }, durability: .durable)
        try await consumers.close()

        let reopened = try await DurableQueue.open(at: Self.directory, configuration: Self.configuration(disk))
        let consumer = try await reopened.consumer(named: "c")
        #expect(consumer.committed.map { $0.rawValue < past } == true)
        try await reopened.append(bytes("after"))
        #expect(text(try await drain(consumer)) == ["after"], "the element appended after the open was skipped")
        try await reopened.close()
    }
}
