import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Compaction and salvage scan a segment, then read each record again to
/// copy it under a new salt: a bit that changes in between must be caught
/// by the CRC, never resealed into a valid record.
@Suite("Copies are verified again")
struct CopyReverifyTests {
    /// 80 records of 64 KiB in one 8 MiB segment: more than the scanner's
    /// 4 MiB read-ahead, so copying the first records reads them again.
    static let count = 80
    static let payload = 64 << 10

    static func configuration(_ fileSystem: any FileSystem, mode: OutboxLog.Configuration.RecoveryMode = .strict)
        -> OutboxLog.Configuration
    {
        var configuration = simulatedConfiguration(fileSystem, segmentSize: 8 << 20, mode: mode)
        configuration.automaticCompactionRatio = nil
        return configuration
    }

    static func value(_ i: Int) -> [UInt8] { .pattern(payload, seed: i) }

    /// Where record `i` (0-based, key "k\(i)") starts in the first segment.
    static func offset(ofRecord i: Int) -> Int {
        segmentHeaderSize + i * frameSize(key: "k0", payload: payload) + max(0, i - 10)  // keys k10… are one byte longer
    }

    /// The first segment, filled; `k0` overwritten so it holds a dead record.
    static func makeLog(on disk: SimulatedFileSystem) async throws {
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration(disk))
        for i in 0..<count { try await log.put(LogKey("k\(i)"), value(i), durability: .written) }
        try await log.put("k0", value(count), durability: .written)
        try await log.close()
    }

    static let firstSegment = simulatedLogDirectory.appending("00000000000000000001.seg")

    /// How many times `operation` reads `byte` of the first segment of a
    /// fresh log (made by ``makeLog(on:)``).
    static func readsOfByte(_ byte: Int64, during operation: (OutboxLog) async throws -> Void) async throws -> Int {
        let disk = SimulatedFileSystem(directories: ["/data"])
        try await makeLog(on: disk)
        let counter = ReadRotFileSystem(base: disk, path: firstSegment, byte: byte, flipOnRead: nil)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration(counter))
        counter.resetCount()
        try await operation(log)
        try await log.close()
        return counter.readsOfByte
    }

    /// A fresh log whose `read`th read of `byte` of its first segment, from
    /// now on, returns a flipped bit; with the file system under it.
    static func logWithRot(atByte byte: Int64, onRead read: Int) async throws
        -> (log: OutboxLog, rot: ReadRotFileSystem, disk: SimulatedFileSystem)
    {
        let disk = SimulatedFileSystem(directories: ["/data"])
        try await makeLog(on: disk)
        let rot = ReadRotFileSystem(base: disk, path: firstSegment, byte: byte, flipOnRead: nil)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: configuration(rot))
        rot.resetCount(flipOnRead: read)
        return (log, rot, disk)
    }

    @Test("a live record whose bytes change between the compaction's scan and its copy fails the compaction, copied nowhere")
    func compactionReverifies() async throws {
        // Aim at a payload byte of k1, the first live record.
        let target = Int64(Self.offset(ofRecord: 1) + 500)

        // Count the reads of that byte during a compaction, then replay with
        // the last of them returning a flipped bit.
        let readsDuringCompaction = try await Self.readsOfByte(target) { _ = try await $0.compact() }
        try #require(readsDuringCompaction >= 2, "the copy does not read the record again: nothing to test")

        let (log, rot, disk) = try await Self.logWithRot(atByte: target, onRead: readsDuringCompaction)
        await #expect {
            _ = try await log.compact()
        } throws: { error in
            let error = error as? OutboxLogError
            return error?.code == .corruption && error?.file == Self.firstSegment && error?.offset == Int64(Self.offset(ofRecord: 1))
        }
        let flipped = rot.flipped  // (locals: a failed expectation would print the whole disk)
        #expect(flipped)
        // Nothing was swapped in; the log is usable and whole.
        #expect(try await log.get("k1")?.value == Self.value(1))
        try await log.put("after", [1], durability: .durable)
        try await log.close()
        let reopened = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        #expect(reopened.recoveryReport.isClean)
        for i in [1, 2, 40, Self.count - 1] { #expect(try await reopened.get(LogKey("k\(i)"))?.value == Self.value(i)) }
        #expect(try await reopened.get("k0")?.value == Self.value(Self.count))
        try await reopened.close()
    }

    @Test("salvage skips and reports a record whose bytes change between its scan and its copy")
    func salvageReverifies() async throws {
        let target = Int64(Self.offset(ofRecord: 1) + 500)
        // Rot in the middle of the segment, followed by valid records: salvage.
        func damaged() async throws -> SimulatedFileSystem {
            let disk = SimulatedFileSystem(directories: ["/data"])
            try await Self.makeLog(on: disk)
            try disk.flipBit(inFile: Self.firstSegment, atByte: Self.offset(ofRecord: 40) + 40)
            return disk
        }
        let counting = ReadRotFileSystem(base: try await damaged(), path: Self.firstSegment, byte: target, flipOnRead: nil)
        let plain = try await OutboxLog.open(
            at: simulatedLogDirectory, configuration: Self.configuration(counting, mode: .salvage))
        let reads = counting.readsOfByte
        #expect(try await plain.get("k1")?.value == Self.value(1))
        try await plain.close()
        try #require(reads >= 3, "salvage does not read the record again to copy it: nothing to test")

        let disk = try await damaged()
        let rot = ReadRotFileSystem(base: disk, path: Self.firstSegment, byte: target, flipOnRead: reads)
        let salvaged = try await OutboxLog.open(
            at: simulatedLogDirectory, configuration: Self.configuration(rot, mode: .salvage))
        let flipped = rot.flipped  // (locals: a failed expectation would print the whole disk)
        #expect(flipped)
        let report = salvaged.recoveryReport
        let keptChanged = salvaged.contains("k1")
        #expect(!keptChanged, "a record whose bytes changed was kept")
        #expect(
            report.skipped.contains { $0.offset == Int64(Self.offset(ofRecord: 1)) && $0.damage == .noLongerVerifies(.crcMismatch) },
            "\(report)")
        #expect(try await salvaged.get("k2")?.value == Self.value(2))
        try await salvaged.close()
        let strict = try await OutboxLog.open(at: simulatedLogDirectory, configuration: Self.configuration(disk))
        let keptAfterReopen = strict.contains("k1")
        #expect(!keptAfterReopen)
        try await strict.close()
    }
}

/// Passes every call to `base`, but flips one bit of `byte` of the file at
/// `path` in what the Nth read covering that byte returns: bit rot that
/// appears between two reads (the disk itself is unchanged). Counts only
/// reads through descriptors opened on `path` before a file was renamed
/// onto that name (that is another file).
final class ReadRotFileSystem: ForwardingFileSystem, Sendable {
    let base: any FileSystem
    let path: FilePath
    let byte: Int64
    private let state: Locked<(descriptors: Set<CInt>, replaced: Bool, reads: Int, flipOn: Int?, flipped: Bool)>

    init(base: any FileSystem, path: FilePath, byte: Int64, flipOnRead: Int?) {
        self.base = base
        self.path = path
        self.byte = byte
        state = Locked(([], false, 0, flipOnRead, false))
    }

    /// Reads of `byte` so far.
    var readsOfByte: Int { state.withLock { $0.reads } }
    /// Whether the flip happened.
    var flipped: Bool { state.withLock { $0.flipped } }

    func resetCount(flipOnRead: Int? = nil) {
        state.withLock {
            $0.reads = 0
            $0.flipOn = flipOnRead
        }
    }

    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let descriptor = try base.openFile(path, mode: mode)
        if path == self.path { state.withLock { if !$0.replaced { $0.descriptors.insert(descriptor.rawValue) } } }
        return descriptor
    }
    func close(_ descriptor: FileDescriptor) throws(Errno) {
        state.withLock { _ = $0.descriptors.remove(descriptor.rawValue) }
        try base.close(descriptor)
    }
    func read(_ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        let n = try base.read(descriptor, into: buffer, at: offset)
        let flip = state.withLock { state -> Bool in
            guard state.descriptors.contains(descriptor.rawValue), offset <= byte, byte < offset + Int64(n) else { return false }
            state.reads += 1
            guard state.reads == state.flipOn else { return false }
            state.flipped = true
            return true
        }
        if flip { buffer[Int(byte - offset)] ^= 0x10 }
        return n
    }
    func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try base.rename(source, to: destination)
        if destination == path { state.withLock { $0.replaced = true } }
    }
}
