import Foundation
import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@testable import OutboxStorage

/// A close that reports an error has still released the descriptor (Linux
/// close(2) on EIO or EINTR; the kernel's number may go at once to another
/// open, in this process: a log's segment, an event loop's epoll). Closing
/// it again could close someone else's file, so nothing may.
@Suite("A descriptor is closed once")
struct CloseOnceTests {
    @Test("a small file whose close reports an error is not closed again")
    func smallFile() throws {
        let disk = CloseReportingFailure(base: SimulatedFileSystem(directories: ["/q"]))
        #expect(throws: OutboxError.self) {
            try SmallFile.write(Array("snapshot".utf8), to: "/q/SNAPSHOT", fileSystem: disk, replacing: true, synced: false)
        }
        #expect(disk.closedTwice.isEmpty, "descriptors closed again: \(disk.closedTwice)")
    }

    @Test("a payload file whose close reports an error is not closed again, and its enqueue is refused")
    func payloadFile() async throws {
        let disk = CloseReportingFailure(base: SimulatedFileSystem()) { $0.string.contains("/payloads/") }
        var configuration = quietConfiguration(on: disk)
        configuration.largePayloadThreshold = 1024
        let store = try await LogOutboxStore.open(root: "/root", partition: "u", configuration: configuration)
        let request = OutboxEnqueueRequest(type: "t", method: "POST", endpoint: "/x", payload: Array(repeating: 7, count: 4096))
        await #expect(throws: OutboxError.self) { _ = try await store.enqueue(request) }
        #expect(disk.closedTwice.isEmpty, "descriptors closed again: \(disk.closedTwice)")
        #expect(try await store.summary().total == 0)
        try await store.close()
    }
}

/// Passes every call on; the close of a descriptor opened on a path
/// `failing` picks (every path by default) is done, then reported as failed
/// (EIO), as close(2) may. Records a descriptor closed again while no open
/// has returned that number since.
final class CloseReportingFailure: ForwardingFileSystem, @unchecked Sendable {
    let base: any FileSystem
    private let failing: @Sendable (FilePath) -> Bool
    /// Open descriptors, and whether each one's close is reported as failed.
    private let open = Locked<[Int32: Bool]>([:])
    private let twice = Locked<[Int32]>([])

    init(base: any FileSystem, failing: @escaping @Sendable (FilePath) -> Bool = { _ in true }) {
        self.base = base
        self.failing = failing
    }

    var closedTwice: [Int32] { twice.withLock { $0 } }

    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let descriptor = try base.openFile(path, mode: mode)
        let fails = failing(path)
        open.withLock { $0[descriptor.rawValue] = fails }
        return descriptor
    }

    func close(_ descriptor: FileDescriptor) throws(Errno) {
        guard let fails = open.withLock({ $0.removeValue(forKey: descriptor.rawValue) }) else {
            twice.withLock { $0.append(descriptor.rawValue) }
            throw .badFileDescriptor
        }
        try base.close(descriptor)
        if fails { throw .ioError }
    }
}
