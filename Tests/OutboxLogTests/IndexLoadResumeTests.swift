import OutboxLocking
import OutboxLogTesting
import SystemPackage
import Testing

@testable import OutboxLog

/// The index load after an open with a checkpoint reads, in the segment
/// that was the newest when the checkpoint was written (sealed since), only
/// the bytes written after it; and a checkpoint whose covered bytes do not
/// end where those records begin is not used.
@Suite("Index load after a checkpoint")
struct IndexLoadResumeTests {
    /// A log closed with a checkpoint, then appended to past the end of its
    /// newest segment and killed (no newer checkpoint): the model, and the
    /// segment the checkpoint saw as the newest with the bytes it covers.
    static func sealedAfterCheckpoint(_ disk: SimulatedFileSystem) async throws -> (LogModel, segment: FilePath, coveredEnd: Int64) {
        var model = try await IndexCheckpointTests.populated(disk)
        let checkpoint = try #require(disk.contents(of: IndexCheckpointTests.checkpointPath))
        let segments = Int(IndexCheckpointTests.read(UInt32.self, at: 24, in: checkpoint))
        let entry = 64 + 88 * (segments - 1)
        let base = IndexCheckpointTests.read(UInt64.self, at: entry, in: checkpoint)
        let coveredEnd = Int64(IndexCheckpointTests.read(UInt64.self, at: entry + 24, in: checkpoint))
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: IndexCheckpointTests.configuration(disk))
        for index in 0..<80 {
            let value = [UInt8].pattern(100, seed: 5000 + index)
            try await log.put(LogKey("after-\(index)"), value, durability: .buffered)
            model[LogKey("after-\(index)")] = (value, nil)
        }
        try await log.flush()
        disk.simulateProcessCrash()
        let segment = simulatedLogDirectory.appending(DirectoryLayout.segmentName(base: base))
        let size = try #require(disk.contents(of: segment)).count
        #expect(Int64(size) > coveredEnd, "records were appended to the segment after the checkpoint")
        let newest = try disk.contentsOfDirectory(simulatedLogDirectory).filter { $0.hasSuffix(".seg") }.sorted().last
        #expect(newest != segment.lastComponent?.string, "the segment was sealed")
        return (model, segment, coveredEnd)
    }

    @Test("the segment that was the newest is read from the checkpoint's covered end, not from its start")
    func readsOnlyAfterTheCheckpoint() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (model, segment, coveredEnd) = try await Self.sealedAfterCheckpoint(disk)
        let recorder = ReadRecorder(base: disk)
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: IndexCheckpointTests.configuration(recorder))
        // Waits for the index load, and reads no record. (The open reads
        // the segment's header: at 0, and finds the end.)
        #expect(try await log.get("never-written") == nil)
        #expect(log.recoveryReport.checkpointRejected == nil)
        let covered = recorder.reads(of: segment).filter { $0.offset > 0 && $0.count > 0 && $0.offset < coveredEnd }
        #expect(covered.isEmpty, "reads of the covered records: \(covered)")
        try await expectLog(log, equals: model)
        try await log.close()
    }

    @Test("a checkpoint whose covered end is not where the later records begin is not used; every record is found")
    func coveredEndOffAFrame() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (model, segment, _) = try await Self.sealedAfterCheckpoint(disk)
        try IndexCheckpointTests.forge(disk) { bytes in
            let segments = Int(IndexCheckpointTests.read(UInt32.self, at: 24, in: bytes))
            // The covered end, and the frame bytes it must agree with.
            for at in [64 + 88 * (segments - 1) + 24, 64 + 88 * (segments - 1) + 32] {
                IndexCheckpointTests.put(IndexCheckpointTests.read(UInt64.self, at: at, in: bytes) + 1, at: at, in: &bytes)
            }
        }
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: IndexCheckpointTests.configuration(disk))
        try await expectLog(log, equals: model)
        let expected = IndexCheckpointRejection.recordsAfterDoNotContinue(segment: try #require(segment.lastComponent).string)
        #expect(log.recoveryReport.checkpointRejected == expected)
        try await log.close()
    }
}

@Suite("Index load after a checkpoint: changed keys")
struct ChangedKeysLoadTests {
    @Test("keys changed after a position where the newest segment starts are collected without reading an older segment")
    func changesInTheNewestSegmentOnly() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: IndexCheckpointTests.configuration(disk))
        var written: [(position: LogPosition, key: LogKey)] = []
        for index in 0..<120 {
            let key = LogKey("key-\(index)")
            try await log.put(key, .pattern(100, seed: index), durability: .buffered)
            written.append((log.position, key))
        }
        try await log.close()
        let segments = try disk.contentsOfDirectory(simulatedLogDirectory).filter { $0.hasSuffix(".seg") }.sorted()
        #expect(segments.count >= 3)
        let newest = try #require(segments.last)
        let newestBase = try #require(UInt64(newest.prefix(20)))
        let since = try #require(written.first { $0.position.sequence == newestBase - 1 }).position

        let recorder = ReadRecorder(base: disk)
        let reopened = try await OutboxLog.open(
            at: simulatedLogDirectory, configuration: IndexCheckpointTests.configuration(recorder), changesAfter: since)
        #expect(reopened.holdsHistory)
        let changed = try await reopened.changedKeys()
        #expect(changed == Set(written.filter { $0.position.sequence >= newestBase }.map(\.key)))
        // The open reads each segment's header (at 0, and finds the end).
        for name in segments.dropLast() {
            let reads = recorder.reads(of: simulatedLogDirectory.appending(name)).filter { $0.offset > 0 && $0.count > 0 }
            #expect(reads.isEmpty, "\(name): \(reads)")
        }
        try await reopened.close()
    }
}

extension IndexCheckpointTests {
    static func read<T: FixedWidthInteger>(_: T.Type, at offset: Int, in bytes: [UInt8]) -> T {
        (0..<(T.bitWidth / 8)).reduce(T(0)) { $0 | T(bytes[offset + $1]) << (8 * $1) }
    }
}

/// Passes every call on, and records each read: its file, offset and size.
final class ReadRecorder: ForwardingFileSystem, Sendable {
    struct Read: Sendable, CustomStringConvertible {
        var path: FilePath
        var offset: Int64
        var count: Int64
        var description: String { "\(path.lastComponent?.string ?? "") [\(offset), +\(count))" }
    }

    let base: any FileSystem
    private let opened = Locked<[Int32: FilePath]>([:])
    private let recorded = Locked<[Read]>([])

    init(base: any FileSystem) { self.base = base }

    func reads(of path: FilePath) -> [Read] { recorded.withLock { $0.filter { $0.path == path } } }

    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let descriptor = try base.openFile(path, mode: mode)
        opened.withLock { $0[descriptor.rawValue] = path }
        return descriptor
    }

    func read(_ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        let count = try base.read(descriptor, into: buffer, at: offset)
        if let path = opened.withLock({ $0[descriptor.rawValue] }) {
            recorded.withLock { $0.append(Read(path: path, offset: offset, count: Int64(count))) }
        }
        return count
    }
}
