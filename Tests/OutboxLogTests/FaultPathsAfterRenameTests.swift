import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// A file written under a temporary name and renamed into place (the
/// log's segments, its index, the store's checkpoint) is known by its final
/// name: a fault rule aimed at that name must reach the descriptor opened
/// before the rename, as `/proc/self/fd` follows the file. Otherwise a test
/// that aims a fault at `.seg` silently injects nothing.
@Suite("Fault path filters follow renames")
struct FaultPathsAfterRenameTests {
    @Test("simulated file system: a sync after the rename matches the new name, not the old one")
    func simulated() throws {
        let disk = SimulatedFileSystem(directories: ["/d"])
        try expectFaultFollowsRename(disk, faults: disk.faults, directory: "/d")
    }

    @Test("fault-injecting wrapper on a real disk: the same")
    func wrapped() throws {
        let directory = TemporaryDirectory()
        let disk = FaultInjectingFileSystem(wrapping: PosixFileSystem())
        try expectFaultFollowsRename(disk, faults: disk.faults, directory: directory.path)
    }

    @Test("a renamed directory carries the paths of the descriptors open below it")
    func directoryRename() throws {
        let disk = SimulatedFileSystem(directories: ["/d/a"])
        let descriptor = try disk.openFile("/d/a/file", mode: .createOrOpen)
        try disk.rename("/d/a", to: "/d/b")
        _ = disk.faults.install(.nthCall(1, of: .synchronize, paths: .exactly("/d/b/file")))
        #expect(throws: Errno.ioError) { try disk.synchronize(descriptor) }
        try? disk.close(descriptor)
    }

    private func expectFaultFollowsRename(
        _ disk: any FileSystem, faults: FaultInjector, directory: FilePath
    ) throws {
        let temporary = directory.appending("segment.seg.tmp")
        let final = directory.appending("segment.seg")
        let descriptor = try disk.openFile(temporary, mode: .createOrOpen)
        defer { try? disk.close(descriptor) }
        try disk.rename(temporary, to: final)
        let old = faults.install(.nthCall(1, of: .synchronize, paths: .suffix(".tmp")))
        try disk.synchronize(descriptor)  // no longer named *.tmp: the rule does not fire
        faults.remove(old)
        _ = faults.install(.nthCall(1, of: .synchronize, paths: .suffix(".seg")))
        #expect(throws: Errno.ioError) { try disk.synchronize(descriptor) }
        #expect(faults.callCount(of: .synchronize, paths: .exactly(final)) == 2)
    }
}
