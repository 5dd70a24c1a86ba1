import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// What recovery may do to a log it found after a crash: cut, or write
/// repairs to a new file and swap it in — never overwrite records in place
/// (a torn sector is not atomic) — and never hand out a sequence number
/// below one the log already used.
@Suite("Recovery repairs")
struct RecoveryRepairTests {
    static func segments(_ disk: SimulatedFileSystem) -> [FilePath] {
        disk.allFiles().filter { $0.string.hasSuffix(".seg") && $0.removingLastComponent() == simulatedLogDirectory }
    }

    @Test("records no durable watermark vouches for are made durable through a new file, never rewritten in place")
    func repairsGoToANewFile() async throws {
        for tornTail in [false, true] {
            let disk = SimulatedFileSystem(directories: ["/data"])
            let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
            for i in 0..<5 { try await log.put(LogKey("durable\(i)"), .pattern(300, seed: i), durability: .durable) }
            for i in 0..<5 { try await log.put(LogKey("written\(i)"), .pattern(300, seed: 10 + i), durability: .written) }
            disk.simulateProcessCrash()
            withExtendedLifetime(log) {}
            let newest = try #require(Self.segments(disk).last)
            let size = try #require(disk.contents(of: newest)).count
            if tornTail { try disk.resizeFile(newest, to: size - 100) }  // the last record torn

            let writes = WriteRecorder(base: disk)
            let recovered = try await OutboxLog.open(
                at: simulatedLogDirectory, configuration: simulatedConfiguration(writes, segmentSize: 1 << 20))
            let inPlace = writes.writes.filter { $0.path == newest && $0.offset < Int64(size) }
            #expect(inPlace.isEmpty, "recovery overwrote records of \(newest) in place: \(inPlace)")
            #expect(recovered.recoveryReport.truncatedTail != nil || !tornTail)
            try await recovered.close()

            // What recovery vouched for is on disk: the machine may die now.
            disk.simulatePowerLoss(.dropUnsynced)
            let reopened = try await OutboxLog.open(
                at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 1 << 20))
            for i in 0..<5 { #expect(try await reopened.get(LogKey("durable\(i)"))?.value == .pattern(300, seed: i)) }
            for i in 0..<(tornTail ? 4 : 5) {
                #expect(try await reopened.get(LogKey("written\(i)"))?.value == .pattern(300, seed: 10 + i), "torn tail: \(tornTail)")
            }
            try await reopened.close()
        }
    }

    @Test("after a compaction of everything and a torn first record, sequence numbers do not start again at 1")
    func sequencesNeverGoBackwards() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        var configuration = simulatedConfiguration(disk)
        configuration.automaticCompactionRatio = nil
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        var highest: UInt64 = 0
        for i in 0..<40 { highest = try await log.put(LogKey("k\(i)"), .pattern(200, seed: i), durability: .written) }
        for i in 0..<40 { highest = try #require(try await log.delete(LogKey("k\(i)"), durability: .durable)) }
        _ = try await log.compact()
        try await log.put("next", .pattern(200, seed: 99), durability: .written)
        disk.simulateProcessCrash()
        withExtendedLifetime(log) {}
        // The only segment left holds one record: tear it.
        let newest = try #require(Self.segments(disk).last)
        try disk.resizeFile(newest, to: 48 + 20)

        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        #expect(reopened.recoveryReport.truncatedTail != nil)
        #expect(reopened.statistics.nextSequence > highest, "sequence numbers restart at \(reopened.statistics.nextSequence)")
        let sequence = try await reopened.put("after", [1], durability: .durable)
        #expect(sequence > highest)
        try await reopened.close()
        // And again after a power loss and a second open.
        disk.simulatePowerLoss(.dropUnsynced)
        let again = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration)
        #expect(again.statistics.nextSequence > sequence)
        try await again.close()
    }
}

/// Passes every call to `base`, recording each write: the path its
/// descriptor was opened with, the offset and the length.
final class WriteRecorder: ForwardingFileSystem, Sendable {
    struct Write: Sendable, CustomStringConvertible {
        var path: FilePath?
        var offset: Int64
        var count: Int
        var description: String { "\(path?.lastComponent?.string ?? "?")@\(offset)+\(count)" }
    }

    let base: any FileSystem
    private let state = Locked<(paths: [CInt: FilePath], writes: [Write])>(([:], []))

    init(base: any FileSystem) { self.base = base }

    var writes: [Write] { state.withLock { $0.writes } }

    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let descriptor = try base.openFile(path, mode: mode)
        state.withLock { $0.paths[descriptor.rawValue] = path }
        return descriptor
    }
    func close(_ descriptor: FileDescriptor) throws(Errno) {
        state.withLock { _ = $0.paths.removeValue(forKey: descriptor.rawValue) }
        try base.close(descriptor)
    }
    func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        state.withLock { $0.writes.append(Write(path: $0.paths[descriptor.rawValue], offset: offset, count: bytes.count)) }
        return try base.write(descriptor, bytes, at: offset)
    }
}
