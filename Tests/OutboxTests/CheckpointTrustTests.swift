import Crypto
import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// The store checkpoint (`SCHEDULE`) is only a shortcut: a checkpoint that
/// cannot be authenticated, or whose values no store writes, is not used —
/// the open reads every entry instead, finds everything the log holds, and
/// never traps.
@Suite("Checkpoint trust")
struct CheckpointTrustTests {
    static let root: FilePath = "/data/root"
    static let key = SymmetricKey(size: .bits256)

    /// A closed queue of 30 entries (so with its checkpoint); its directory and ids.
    static func closedQueue(_ disk: SimulatedFileSystem, key: SymmetricKey? = nil) async throws -> (FilePath, [OutboxEntry.ID]) {
        let (ids, directory) = try await StoreReopenTests.populated(disk, count: 30, key: key)
        #expect((try? disk.itemKind(at: directory.appending(StoreCheckpoint.fileName))) == .file)
        return (directory, ids)
    }

    /// Replaces the checkpoint in `directory` by one with `body`, written in
    /// `format`, at the original position; `nextSequence` as given or as it was.
    static func replaceCheckpoint(
        in directory: FilePath, disk: SimulatedFileSystem, format: RecordFormat, nextSequence: UInt64? = nil,
        body: (_ original: [UInt8]) -> [UInt8]
    ) throws {
        let path = directory.appending(StoreCheckpoint.fileName)
        let header = try #require(try StoreCheckpoint.readHeader(path, fileSystem: disk))
        let original = header.sealed ? [] : try header.readBody(path, format: format, fileSystem: disk)
        let file = try StoreCheckpoint.file(
            body: body(original), position: header.position, nextSequence: nextSequence ?? header.nextSequence, format: format)
        try disk.removeFile(path)
        let descriptor = try disk.openFile(path, mode: .createNew)
        try disk.writeFully(descriptor, file, at: 0)
        try disk.synchronize(descriptor)
        try disk.close(descriptor)
    }

    /// Opens the queue; every entry is there, it was loaded from the log,
    /// and it takes a write.
    static func expectEverythingFound(
        _ disk: SimulatedFileSystem, ids: [OutboxEntry.ID], key: SymmetricKey? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let store = try await LogOutboxStore.open(
            root: root, partition: StoreReopenTests.partition, configuration: StoreReopenTests.configuration(disk, key: key))
        let listed = try await store.entries(matching: .all).map(\.id)
        #expect(Set(listed) == Set(ids.dropFirst()), "\(listed.count) of \(ids.count - 1) entries listed", sourceLocation: sourceLocation)
        #expect(store.core.loadedFrom == .everyEntry, sourceLocation: sourceLocation)
        let entry = try #require(
            try await store.enqueue(request(OutboxEntry.ID())).newEntry, "the store refused a write", sourceLocation: sourceLocation)
        #expect(try await store.entries(matching: .all).allSatisfy { $0.id == entry.id || $0.sequence < entry.sequence })
        try await store.close()
    }

    @Test("a plain checkpoint beside a sealed queue is not trusted: every entry is found, and stays found after the next close")
    func plainCheckpointOfASealedQueue() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (directory, ids) = try await Self.closedQueue(disk, key: Self.key)
        // Same position, nothing in it: would hide every entry if believed.
        let empty = StoreCheckpointBody.encode(
            Scheduler(partition: StoreReopenTests.partition, configuration: quietConfiguration()).checkpointContent,
            format: RecordFormat(partition: StoreReopenTests.partition, key: nil))
        try Self.replaceCheckpoint(in: directory, disk: disk, format: RecordFormat(partition: StoreReopenTests.partition, key: nil)) { _ in
            empty
        }
        try await Self.expectEverythingFound(disk, ids: ids, key: Self.key)
        let again = try await LogOutboxStore.open(
            root: Self.root, partition: StoreReopenTests.partition, configuration: StoreReopenTests.configuration(disk, key: Self.key))
        #expect(try await again.entries(matching: .all).count == ids.count)
        try await again.close()
    }

    @Test("a sealed checkpoint whose clear header was changed is not used")
    func sealedHeaderIsAuthenticatedWhole() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (directory, ids) = try await Self.closedQueue(disk, key: Self.key)
        let path = directory.appending(StoreCheckpoint.fileName)
        var bytes = try #require(disk.contents(of: path))
        let header = try #require(try StoreCheckpoint.readHeader(path, fileSystem: disk))
        // The next sequence number, made larger, with the header's CRC made to match.
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: (header.nextSequence + 1_000_000).littleEndian, toByteOffset: 16, as: UInt64.self) }
        let crc = CRC32.checksum(Array(bytes[..<(header.headerSize - 4)]))
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: header.headerSize - 4, as: UInt32.self) }
        try disk.removeFile(path)
        let descriptor = try disk.openFile(path, mode: .createNew)
        try disk.writeFully(descriptor, bytes, at: 0)
        try disk.close(descriptor)
        try await Self.expectEverythingFound(disk, ids: ids, key: Self.key)
    }

    enum Extreme: String, CaseIterable, CustomTestStringConvertible {
        case nextSequence = "a next sequence number of 2^64 - 1"
        case entryCount = "an entry count of 2^63"
        case completionCount = "a completion count of 2^64 - 1"
        case entrySequence = "an entry's sequence number of 2^64 - 1"
        case nameCount = "a name count of 2^32 - 1"
        var testDescription: String { rawValue }
    }

    @Test("a checkpoint with a value no store writes is refused, never trusted or trapped on", arguments: Extreme.allCases)
    func extremeValues(_ extreme: Extreme) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (directory, ids) = try await Self.closedQueue(disk)
        let format = RecordFormat(partition: StoreReopenTests.partition, key: nil)
        try Self.replaceCheckpoint(
            in: directory, disk: disk, format: format, nextSequence: extreme == .nextSequence ? .max : nil
        ) { original in
            var writer = ByteWriter()
            switch extreme {
            case .nextSequence: return original
            case .nameCount:
                writer.integer(UInt32.max)
            case .entryCount:
                writer.integer(UInt32(0))
                writer.integer(UInt64(1) << 63)
            case .completionCount:
                writer.integer(UInt32(0))
                writer.integer(UInt64(0))
                writer.integer(UInt64.max)
            case .entrySequence:
                writer.integer(UInt32(0))
                writer.integer(UInt64(1))
                writer.uuid(OutboxEntry.ID().uuid)
                writer.integer(UInt64.max)  // sequence
                writer.integer(Int64(0))  // when
                writer.integer(Int64(0))  // created at
                writer.integer(UInt32(10))  // stored bytes
                writer.integer(UInt32(0))  // scope
                writer.integer(UInt32(0))  // type
                writer.integer(UInt32(0))  // coalescing
                writer.integer(Int16(0))  // priority
                writer.integer(UInt16(0))  // attempts
                writer.integer(UInt16(5))  // max attempts
                writer.integer(OutboxStatus.pending.code)
                writer.integer(UInt8(0))  // flags
                writer.integer(UInt64(0))  // completions
            }
            return writer.bytes + [UInt8](repeating: 0, count: 64 * 64)
        }
        try await Self.expectEverythingFound(disk, ids: ids)
    }
}
