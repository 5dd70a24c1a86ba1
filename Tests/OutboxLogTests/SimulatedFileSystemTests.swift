import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

// Tests of the simulated file system itself: the crash-safety tests of the
// engine are only as good as this model, so each semantic it promises is
// checked here, in a way that fails if the model gets it wrong.

// MARK: - Helpers (file-private so other test files may use the same names)

@discardableResult
private func writeBytes(_ fs: some FileSystem, _ fd: FileDescriptor, _ bytes: [UInt8], at offset: Int64) throws -> Int {
    try bytes.withUnsafeBytes { try fs.write(fd, $0, at: offset) }
}

private func readWholeFile(_ fs: some FileSystem, _ fd: FileDescriptor) throws -> [UInt8] {
    let size = Int(try fs.size(of: fd))
    var buffer = [UInt8](repeating: 0, count: size)
    let n = try buffer.withUnsafeMutableBytes { try fs.read(fd, into: $0, at: 0) }
    return Array(buffer.prefix(n))
}

/// Creates `path` with `bytes`; optionally syncs its data and its directory.
private func makeSimFile(
    _ fs: SimulatedFileSystem, _ path: FilePath, _ bytes: [UInt8], syncData: Bool = true, syncDirectory: Bool = true
) throws {
    let fd = try fs.openFile(path, mode: .createNew)
    try writeBytes(fs, fd, bytes, at: 0)
    if syncData { try fs.synchronize(fd) }
    try fs.close(fd)
    if syncDirectory { try fs.synchronizeDirectory(path.removingLastComponent()) }
}

private func filled(_ value: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: value, count: count) }

/// A file `/db/log` whose name is durable and whose content is empty on
/// disk, followed by unsynced appends of `sizes.count` records: record i
/// has `sizes[i]` bytes of value i + 1. Returns the file system and the
/// record boundaries.
private func logWithUnsyncedAppends(_ sizes: [Int]) throws -> (SimulatedFileSystem, [Range<Int>]) {
    let fs = SimulatedFileSystem(directories: ["/db"])
    try makeSimFile(fs, "/db/log", [])
    let fd = try fs.openFile("/db/log", mode: .readWrite)
    var ranges: [Range<Int>] = []
    var offset = 0
    for (index, size) in sizes.enumerated() {
        try writeBytes(fs, fd, filled(UInt8(index + 1), size), at: Int64(offset))
        ranges.append(offset..<offset + size)
        offset += size
    }
    return (fs, ranges)
}

/// A copy of `fs` after a power loss of `mode` with `seed`, and what the loss did to it.
private func powerLoss(of fs: SimulatedFileSystem, _ mode: PowerLossMode, seed: UInt64) -> (SimulatedFileSystem, PowerLossReport) {
    let crashed = fs.snapshot()
    let report = crashed.simulatePowerLoss(mode, seed: seed)
    return (crashed, report)
}

/// The image of the log above when exactly the records in `kept` landed.
private func imageKeeping(_ ranges: [Range<Int>], kept: [Int]) -> [UInt8] {
    guard let last = kept.max() else { return [] }
    var result = filled(0, ranges[last].upperBound)
    for index in kept { result.replaceSubrange(ranges[index], with: filled(UInt8(index + 1), ranges[index].count)) }
    return result
}

// MARK: - Namespace and descriptors

@Suite("SimulatedFileSystem: namespace and descriptors")
struct SimulatedFileSystemNamespaceTests {
    @Test func directoryOperationsFollowPOSIX() throws {
        let fs = SimulatedFileSystem()
        try fs.createDirectory("/a")
        #expect(throws: Errno.fileExists) { try fs.createDirectory("/a") }
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.createDirectory("/missing/b") }
        try makeSimFile(fs, "/a/z", [1])
        try makeSimFile(fs, "/a/b", [2])
        #expect(try fs.contentsOfDirectory("/a") == ["b", "z"])
        #expect(try fs.itemKind(at: "/a") == .directory)
        #expect(try fs.itemKind(at: "/a/b") == .file)
        #expect(try fs.itemKind(at: "/a/nothing") == nil)
        #expect(try fs.itemKind(at: "/a/b/below-a-file") == nil)
        #expect(throws: Errno.notDirectory) { try fs.createDirectory("/a/b/c") }
        #expect(throws: Errno.directoryNotEmpty) { try fs.removeDirectory("/a") }
        #expect(throws: Errno.notDirectory) { try fs.removeDirectory("/a/b") }
        #expect(throws: Errno.isDirectory) { try fs.removeFile("/a") }
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.removeFile("/a/nothing") }
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.rename("/a/nothing", to: "/a/x") }
        #expect(throws: Errno.invalidArgument) { try fs.createDirectory("relative") }
        #expect(throws: Errno.invalidArgument) { try fs.rename("/a", to: "/a/inside") }
        try fs.removeFile("/a/b")
        try fs.removeFile("/a/z")
        try fs.removeDirectory("/a")
        #expect(try fs.itemKind(at: "/a") == nil)
        #expect(fs.allDirectories() == ["/"])
    }

    @Test func renameReplacesTheDestinationAtomically() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/new", [2])
        try makeSimFile(fs, "/db/current", [1])
        try fs.rename("/db/new", to: "/db/current")
        #expect(fs.contents(of: "/db/current") == [2])
        #expect(fs.contents(of: "/db/new") == nil)
        #expect(fs.allFiles() == ["/db/current"])
        try fs.createDirectory("/db/dir")
        #expect(throws: Errno.isDirectory) { try fs.rename("/db/current", to: "/db/dir") }
        // Renaming a file onto itself is a no-op.
        try fs.rename("/db/current", to: "/db/current")
        #expect(fs.contents(of: "/db/current") == [2])
    }

    @Test func openModes() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.openFile("/db/f", mode: .readOnly) }
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.openFile("/db/f", mode: .readWrite) }
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.openFile("/nodir/f", mode: .createOrOpen) }
        let created = try fs.openFile("/db/f", mode: .createOrOpen)
        try writeBytes(fs, created, [1, 2, 3], at: 0)
        #expect(throws: Errno.fileExists) { try fs.openFile("/db/f", mode: .createNew) }
        #expect(throws: Errno.isDirectory) { try fs.openFile("/db", mode: .readOnly) }
        // createOrOpen keeps existing contents.
        let reopened = try fs.openFile("/db/f", mode: .createOrOpen)
        #expect(try readWholeFile(fs, reopened) == [1, 2, 3])

        let readOnly = try fs.openFile("/db/f", mode: .readOnly)
        #expect(throws: Errno.badFileDescriptor) { try writeBytes(fs, readOnly, [9], at: 0) }
        #expect(throws: Errno.badFileDescriptor) { try fs.truncate(readOnly, to: 0) }
        #expect(try readWholeFile(fs, readOnly) == [1, 2, 3])
        try fs.synchronize(readOnly)  // fsync on a read-only descriptor is allowed

        for fd in [created, reopened, readOnly] { try fs.close(fd) }
        #expect(throws: Errno.badFileDescriptor) { try fs.close(created) }
        #expect(throws: Errno.badFileDescriptor) { try fs.size(of: created) }
        #expect(throws: Errno.badFileDescriptor) { try writeBytes(fs, FileDescriptor(rawValue: 3), [1], at: 0) }
        #expect(fs.openDescriptorCount == 0)
    }

    @Test func readsAndWritesArePositional() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let fd = try fs.openFile("/db/f", mode: .createNew)
        try writeBytes(fs, fd, [1, 2], at: 4)  // a hole reads as zeros
        #expect(try readWholeFile(fs, fd) == [0, 0, 0, 0, 1, 2])
        try writeBytes(fs, fd, [7], at: 1)
        var buffer = [UInt8](repeating: 0xFF, count: 4)
        #expect(try buffer.withUnsafeMutableBytes { try fs.read(fd, into: $0, at: 4) } == 2)
        #expect(buffer == [1, 2, 0xFF, 0xFF])
        #expect(try buffer.withUnsafeMutableBytes { try fs.read(fd, into: $0, at: 100) } == 0)
        try fs.truncate(fd, to: 2)
        #expect(try readWholeFile(fs, fd) == [0, 7])
        try fs.truncate(fd, to: 3)
        #expect(try readWholeFile(fs, fd) == [0, 7, 0])
    }

    @Test func unlinkedFileStaysUsableThroughOpenDescriptors() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/f", [1, 2, 3])
        let fd = try fs.openFile("/db/f", mode: .readWrite)
        try fs.removeFile("/db/f")
        #expect(try fs.itemKind(at: "/db/f") == nil)
        #expect(fs.allFiles().isEmpty)
        try writeBytes(fs, fd, [4], at: 3)
        #expect(try readWholeFile(fs, fd) == [1, 2, 3, 4])
        try fs.synchronize(fd)

        // A new file under the same name is a different file.
        let other = try fs.openFile("/db/f", mode: .createNew)
        #expect(try readWholeFile(fs, other) == [])
        try writeBytes(fs, other, [9], at: 0)
        #expect(try readWholeFile(fs, fd) == [1, 2, 3, 4])
        try fs.close(fd)
        try fs.close(other)
        #expect(fs.contents(of: "/db/f") == [9])
    }

    @Test func renameOverAnOpenFileLeavesItsDescriptorOnTheOldFile() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/current", [1])
        try makeSimFile(fs, "/db/next", [2])
        let fd = try fs.openFile("/db/current", mode: .readOnly)
        try fs.rename("/db/next", to: "/db/current")
        #expect(try readWholeFile(fs, fd) == [1])
        #expect(fs.contents(of: "/db/current") == [2])
    }

    @Test func flockSemantics() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/LOCK", [])
        try makeSimFile(fs, "/db/OTHER", [])
        let first = try fs.openFile("/db/LOCK", mode: .readWrite)
        let second = try fs.openFile("/db/LOCK", mode: .readOnly)
        let unrelated = try fs.openFile("/db/OTHER", mode: .readWrite)
        try fs.lockExclusively(first)
        try fs.lockExclusively(first)  // relocking through the holder succeeds
        #expect(throws: Errno.wouldBlock) { try fs.lockExclusively(second) }
        try fs.lockExclusively(unrelated)  // locks are per file
        try fs.close(first)
        try fs.lockExclusively(second)  // released on close
        let third = try fs.openFile("/db/LOCK", mode: .readWrite)
        #expect(throws: Errno.wouldBlock) { try fs.lockExclusively(third) }
        fs.simulateProcessCrash()  // released when the process dies
        let afterCrash = try fs.openFile("/db/LOCK", mode: .readWrite)
        try fs.lockExclusively(afterCrash)
        #expect(throws: Errno.badFileDescriptor) { try fs.lockExclusively(third) }
    }

    @Test func concurrentCallsFromManyThreads() async throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let record = filled(0xAB, 64)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    let fd = try fs.openFile(FilePath("/db/w\(worker)"), mode: .createNew)
                    for index in 0..<50 {
                        try writeBytes(fs, fd, record, at: Int64(index * record.count))
                        if index % 10 == 9 { try fs.synchronize(fd) }
                    }
                    try fs.close(fd)
                }
            }
            try await group.waitForAll()
        }
        #expect(fs.allFiles().count == 8)
        for worker in 0..<8 {
            #expect(fs.contents(of: FilePath("/db/w\(worker)")) == Array(repeating: record, count: 50).flatMap { $0 })
        }
        #expect(fs.faults.callCount(of: .write) == 400)
        #expect(fs.faults.callCount(of: .synchronize) == 40)
    }
}

// MARK: - Durability model

@Suite("SimulatedFileSystem: durability")
struct SimulatedFileSystemDurabilityTests {
    @Test func writesAreVisibleAtOnceAndDurableOnlyAfterSynchronize() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let fd = try fs.openFile("/db/f", mode: .createNew)
        try fs.synchronizeDirectory("/db")
        try writeBytes(fs, fd, [1, 2, 3], at: 0)
        #expect(fs.contents(of: "/db/f") == [1, 2, 3])
        #expect(fs.durableContents(of: "/db/f") == [])
        #expect(!fs.isDurable("/db/f"))
        try fs.synchronize(fd)
        #expect(fs.durableContents(of: "/db/f") == [1, 2, 3])
        #expect(fs.isDurable("/db/f"))
        try writeBytes(fs, fd, [4], at: 3)
        try fs.truncate(fd, to: 2)
        #expect(fs.contents(of: "/db/f") == [1, 2])
        #expect(fs.durableContents(of: "/db/f") == [1, 2, 3])
        let report = fs.simulatePowerLoss(.dropUnsynced, seed: 1)
        #expect(report.descriptorsClosed == 1)
        #expect(fs.contents(of: "/db/f") == [1, 2, 3])
        #expect(throws: Errno.badFileDescriptor) { try fs.size(of: fd) }
    }

    @Test func processCrashKeepsExactlyWhatReadsSaw() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try fs.createDirectory("/db/sub")
        try makeSimFile(fs, "/db/sub/f", [1, 2], syncData: false, syncDirectory: false)
        let fd = try fs.openFile("/db/sub/f", mode: .readWrite)
        try writeBytes(fs, fd, [3], at: 2)
        fs.simulateProcessCrash()
        #expect(fs.openDescriptorCount == 0)
        #expect(throws: Errno.badFileDescriptor) { try writeBytes(fs, fd, [4], at: 3) }
        #expect(fs.contents(of: "/db/sub/f") == [1, 2, 3])
        #expect(!fs.isDurable("/db/sub/f"))  // still only in the page cache
        // ... so a power loss after the process crash can still lose it.
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(try fs.itemKind(at: "/db/sub") == nil)
    }

    @Test func newFileNeedsItsDirectorySyncedToSurvivePowerLoss() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/unnamed", [1, 2, 3], syncData: true, syncDirectory: false)
        let fork = fs.snapshot()
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(try fs.itemKind(at: "/db/unnamed") == nil)
        #expect(fs.allFiles().isEmpty)

        try fork.synchronizeDirectory("/db")
        #expect(fork.isDurable("/db/unnamed"))
        for mode in PowerLossMode.allCases {
            for seed in UInt64(0)..<8 {
                let crashed = fork.snapshot()
                crashed.simulatePowerLoss(mode, seed: seed)
                #expect(crashed.contents(of: "/db/unnamed") == [1, 2, 3], "mode \(mode) seed \(seed)")
            }
        }
    }

    @Test func newDirectoryNeedsItsParentSynced() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try fs.createDirectory("/db/segments")
        try makeSimFile(fs, "/db/segments/0001", [1])  // data and /db/segments synced, /db not
        let synced = fs.snapshot()
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(try fs.itemKind(at: "/db/segments") == nil)

        try synced.synchronizeDirectory("/db")
        synced.simulatePowerLoss(.dropUnsynced)
        #expect(synced.contents(of: "/db/segments/0001") == [1])
    }

    @Test func removalIsDurableOnlyAfterDirectorySync() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/old", [7, 7])
        try fs.removeFile("/db/old")
        #expect(try fs.itemKind(at: "/db/old") == nil)
        let synced = fs.snapshot()
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(fs.contents(of: "/db/old") == [7, 7])  // the unlink was lost

        try synced.synchronizeDirectory("/db")
        synced.simulatePowerLoss(.dropUnsynced)
        #expect(try synced.itemKind(at: "/db/old") == nil)
    }

    @Test func renameIsAtomicUnderPowerLoss() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/MANIFEST", Array("old".utf8))
        try makeSimFile(fs, "/db/MANIFEST.tmp", Array("new!".utf8), syncData: true, syncDirectory: false)
        try fs.rename("/db/MANIFEST.tmp", to: "/db/MANIFEST")

        var outcomes: Set<[UInt8]> = []
        for mode in PowerLossMode.allCases {
            for seed in UInt64(0)..<32 {
                let (crashed, _) = powerLoss(of: fs, mode, seed: seed)
                let manifest = crashed.contents(of: "/db/MANIFEST")
                #expect(manifest == Array("old".utf8) || manifest == Array("new!".utf8), "mode \(mode) seed \(seed)")
                if let manifest { outcomes.insert(manifest) }
            }
        }
        #expect(outcomes.count == 2, "some power loss should keep the rename and some should not")

        try fs.synchronizeDirectory("/db")
        for mode in PowerLossMode.allCases {
            let (crashed, _) = powerLoss(of: fs, mode, seed: 3)
            #expect(crashed.contents(of: "/db/MANIFEST") == Array("new!".utf8))
            #expect(crashed.allFiles() == ["/db/MANIFEST"])
        }
    }

    @Test func crossDirectoryRenameNeedsBothDirectoriesSynced() throws {
        let fs = SimulatedFileSystem(directories: ["/a", "/b"])
        try makeSimFile(fs, "/a/x", [5])
        try fs.rename("/a/x", to: "/b/y")

        let onlyDestination = fs.snapshot()
        try onlyDestination.synchronizeDirectory("/b")
        onlyDestination.simulatePowerLoss(.dropUnsynced)
        #expect(onlyDestination.allFiles() == ["/a/x", "/b/y"])  // under both names

        let onlySource = fs.snapshot()
        try onlySource.synchronizeDirectory("/a")
        onlySource.simulatePowerLoss(.dropUnsynced)
        #expect(onlySource.allFiles().isEmpty)  // under neither

        try fs.synchronizeDirectory("/a")
        try fs.synchronizeDirectory("/b")
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(fs.allFiles() == ["/b/y"])
        #expect(fs.contents(of: "/b/y") == [5])
    }

    @Test func failedSynchronizeDropsUnsyncedWritesForGood() throws {
        // fsyncgate: after a failed fsync the data is still readable but can
        // never become durable, even through a later successful fsync.
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/log", [1, 1, 1, 1])
        let fd = try fs.openFile("/db/log", mode: .readWrite)
        try writeBytes(fs, fd, [2, 2], at: 0)
        try writeBytes(fs, fd, [3], at: 4)
        fs.faults.install(.nthCall(1, of: .synchronize))
        #expect(throws: Errno.ioError) { try fs.synchronize(fd) }
        #expect(try readWholeFile(fs, fd) == [2, 2, 1, 1, 3])
        try fs.synchronize(fd)  // succeeds, but too late
        #expect(fs.durableContents(of: "/db/log") == [1, 1, 1, 1])
        #expect(!fs.isDurable("/db/log"))

        for mode in PowerLossMode.allCases {
            for seed in UInt64(0)..<8 {
                let (crashed, report) = powerLoss(of: fs, mode, seed: seed)
                #expect(crashed.contents(of: "/db/log") == [1, 1, 1, 1], "mode \(mode) seed \(seed)")
                #expect(report.files.first?.droppedByFailedSync == 2)
            }
        }

        // Only writing the bytes again makes them durable.
        try writeBytes(fs, fd, [2, 2], at: 0)
        try fs.synchronize(fd)
        #expect(fs.durableContents(of: "/db/log") == [2, 2, 1, 1])
        try writeBytes(fs, fd, [3], at: 4)
        try fs.synchronize(fd)
        #expect(fs.isDurable("/db/log"))
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(fs.contents(of: "/db/log") == [2, 2, 1, 1, 3])
    }

    @Test func failedDirectorySyncChangesNothing() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/f", [1], syncDirectory: false)
        fs.faults.install(.nthCall(1, of: .synchronizeDirectory))
        #expect(throws: Errno.ioError) { try fs.synchronizeDirectory("/db") }
        #expect(!fs.isDurable("/db/f"))
        try fs.synchronizeDirectory("/db")
        #expect(fs.isDurable("/db/f"))
    }

    @Test func snapshotIsAnIndependentCopyWithoutDescriptors() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let fd = try fs.openFile("/db/f", mode: .createNew)
        try fs.lockExclusively(fd)
        try writeBytes(fs, fd, [1], at: 0)
        fs.faults.install(.fromNthCall(1, of: .write))
        let copy = fs.snapshot()
        #expect(throws: Errno.ioError) { try writeBytes(fs, fd, [2], at: 1) }

        #expect(copy.openDescriptorCount == 0)
        #expect(copy.contents(of: "/db/f") == [1])
        #expect(throws: Errno.badFileDescriptor) { try writeBytes(copy, fd, [3], at: 0) }
        let copied = try copy.openFile("/db/f", mode: .readWrite)
        try copy.lockExclusively(copied)  // the original's lock did not come along
        try writeBytes(copy, copied, [3], at: 0)  // nor did its fault rules
        #expect(copy.contents(of: "/db/f") == [3])
        #expect(fs.contents(of: "/db/f") == [1])
        // The unsynced state came along: a power loss can still drop it.
        copy.simulatePowerLoss(.dropUnsynced)
        #expect(copy.allFiles().isEmpty)
    }

    @Test func corruptionHelpersChangeTheDiskItself() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/seg", filled(0xFF, 1024))
        try fs.flipBit(inFile: "/db/seg", atByte: 10, bit: 3)
        try fs.zeroBytes(inFile: "/db/seg", 512..<2000)
        try fs.resizeFile("/db/seg", to: 600)
        var expected = filled(0xFF, 512) + filled(0, 88)
        expected[10] = 0xF7
        #expect(fs.contents(of: "/db/seg") == expected)
        fs.simulatePowerLoss(.dropUnsynced)
        #expect(fs.contents(of: "/db/seg") == expected)
        try fs.setContents(of: "/db/seg", to: [1, 2])
        #expect(fs.contents(of: "/db/seg") == [1, 2])
        #expect(throws: Errno.noSuchFileOrDirectory) { try fs.setContents(of: "/db/none", to: []) }
        #expect(throws: Errno.isDirectory) { try fs.setContents(of: "/db", to: []) }
    }
}

// MARK: - Power-loss modes

@Suite("SimulatedFileSystem: power-loss modes")
struct SimulatedFileSystemPowerLossTests {
    @Test func dropUnsyncedKeepsOnlyDurableState() throws {
        let (fs, _) = try logWithUnsyncedAppends([100, 100, 100])
        let report = fs.simulatePowerLoss(.dropUnsynced, seed: 99)
        #expect(fs.contents(of: "/db/log") == [])
        #expect(report.files.map(\.landedOperations) == [[]])
        #expect(report.files.map(\.unsyncedOperations) == [3])
    }

    @Test func keepRandomPrefixKeepsAPrefixOfEachFile() throws {
        let (fs, ranges) = try logWithUnsyncedAppends([100, 100, 100, 100])
        var prefixLengths: Set<Int> = []
        for seed in UInt64(0)..<64 {
            let (crashed, report) = powerLoss(of: fs, .keepRandomPrefix, seed: seed)
            let landed = report.files[0].landedOperations
            #expect(landed == Array(0..<landed.count), "seed \(seed): not a prefix")
            #expect(crashed.contents(of: "/db/log") == imageKeeping(ranges, kept: landed), "seed \(seed)")
            prefixLengths.insert(landed.count)
        }
        #expect(prefixLengths == [0, 1, 2, 3, 4])
    }

    @Test func keepRandomPrefixAlsoCutsDirectoryChangesAtAPrefix() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        for index in 0..<4 { try makeSimFile(fs, FilePath("/db/f\(index)"), [UInt8(index)], syncDirectory: false) }
        var survivorCounts: Set<Int> = []
        for seed in UInt64(0)..<64 {
            let (crashed, _) = powerLoss(of: fs, .keepRandomPrefix, seed: seed)
            let names = try crashed.contentsOfDirectory("/db")
            #expect(names == (0..<names.count).map { "f\($0)" }, "seed \(seed): created out of order")
            survivorCounts.insert(names.count)
        }
        #expect(survivorCounts == [0, 1, 2, 3, 4])
    }

    @Test func tearLastWriteCutsTheLastSurvivingWriteAtASectorBoundary() throws {
        // 700-byte records straddle 512-byte sectors, as real records do.
        let (fs, ranges) = try logWithUnsyncedAppends([700, 700, 700])
        var tornMidRecord = 0
        for seed in UInt64(0)..<64 {
            let (crashed, report) = powerLoss(of: fs, .tearLastWrite, seed: seed)
            let outcome = report.files[0]
            let contents = crashed.contents(of: "/db/log")!
            #expect(!outcome.landedOperations.isEmpty)
            #expect(outcome.landedOperations == Array(0..<outcome.landedOperations.count))
            let whole = imageKeeping(ranges, kept: outcome.landedOperations)
            if let torn = outcome.tornWrite {
                #expect(torn.operationIndex == outcome.landedOperations.last)
                #expect((torn.offset + torn.bytesLanded) % 512 == 0, "seed \(seed): not at a sector boundary")
                #expect(torn.bytesLanded > 0 && torn.bytesLanded < torn.bytesIntended)
                #expect(contents == Array(whole.prefix(torn.offset + torn.bytesLanded)), "seed \(seed)")
                tornMidRecord += 1
            } else {
                #expect(contents == whole, "seed \(seed)")
            }
        }
        #expect(tornMidRecord > 10)
    }

    @Test func tearLastWriteNeverTearsWithinASector() throws {
        let (fs, ranges) = try logWithUnsyncedAppends([100, 100])  // both inside sector 0
        for seed in UInt64(0)..<32 {
            let (crashed, report) = powerLoss(of: fs, .tearLastWrite, seed: seed)
            #expect(report.files[0].tornWrite == nil)
            #expect(crashed.contents(of: "/db/log") == imageKeeping(ranges, kept: report.files[0].landedOperations))
        }
    }

    @Test func garbageTailGrowsTheSizeWithoutTheData() throws {
        let (fs, ranges) = try logWithUnsyncedAppends([300, 300, 300])
        var zeroTails = 0
        var randomTails = 0
        for seed in UInt64(0)..<64 {
            let (crashed, report) = powerLoss(of: fs, .garbageTail, seed: seed)
            let outcome = report.files[0]
            let contents = crashed.contents(of: "/db/log")!
            let garbage = try #require(outcome.garbageTail, "seed \(seed): every append extends the file")
            #expect(outcome.landedOperations == Array(0..<garbage.operationIndex))
            #expect(garbage.range == ranges[garbage.operationIndex])
            #expect(contents.count == ranges[garbage.operationIndex].upperBound)
            let before = imageKeeping(ranges, kept: outcome.landedOperations)
            #expect(Array(contents[..<garbage.range.lowerBound]) == before)
            let tail = Array(contents[garbage.range])
            #expect(tail != filled(UInt8(garbage.operationIndex + 1), garbage.range.count), "the data must not land")
            if garbage.isZeros {
                #expect(tail == filled(0, tail.count))
                zeroTails += 1
            } else {
                #expect(tail != filled(0, tail.count))
                randomTails += 1
            }
        }
        #expect(zeroTails > 0 && randomTails > 0)
    }

    @Test func garbageTailLeavesOverwritesInsideTheFileAlone() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/f", filled(1, 100))
        let fd = try fs.openFile("/db/f", mode: .readWrite)
        try writeBytes(fs, fd, filled(2, 50), at: 0)  // not extending: no garbage possible
        for seed in UInt64(0)..<16 {
            let (crashed, report) = powerLoss(of: fs, .garbageTail, seed: seed)
            #expect(report.files[0].garbageTail == nil)
            let contents = crashed.contents(of: "/db/f")
            #expect(contents == filled(1, 100) || contents == filled(2, 50) + filled(1, 50))
        }
    }

    @Test func reorderKeepsArbitrarySubsetsAcrossFiles() throws {
        let (fs, ranges) = try logWithUnsyncedAppends([100, 100, 100, 100])
        try makeSimFile(fs, "/db/other", [], syncData: true, syncDirectory: true)
        let other = try fs.openFile("/db/other", mode: .readWrite)
        try writeBytes(fs, other, [9], at: 0)

        var sawNonPrefix = false
        var sawLaterFileWithoutEarlierWrite = false
        for seed in UInt64(0)..<64 {
            let (crashed, report) = powerLoss(of: fs, .reorder, seed: seed)
            let log = try #require(report.files.first { $0.path == "/db/log" })
            #expect(crashed.contents(of: "/db/log") == imageKeeping(ranges, kept: log.landedOperations), "seed \(seed)")
            if log.landedOperations != Array(0..<log.landedOperations.count) { sawNonPrefix = true }
            // /db/other's write was issued after all of /db/log's.
            if crashed.contents(of: "/db/other") == [9] && !log.landedOperations.contains(3) {
                sawLaterFileWithoutEarlierWrite = true
            }
        }
        #expect(sawNonPrefix)
        #expect(sawLaterFileWithoutEarlierWrite)
    }

    @Test func sameOperationsAndSeedGiveTheSameOutcome() throws {
        func workload() throws -> SimulatedFileSystem {
            let fs = SimulatedFileSystem(directories: ["/db"])
            for file in 0..<3 {
                let fd = try fs.openFile(FilePath("/db/seg\(file)"), mode: .createNew)
                let size = 300 + 37 * file
                for record in 0..<6 {
                    try writeBytes(fs, fd, filled(UInt8(record + 1), size), at: Int64(record * size))
                    if record == 2 { try fs.synchronize(fd) }
                }
            }
            try fs.rename("/db/seg0", to: "/db/renamed")
            return fs
        }
        for mode in PowerLossMode.allCases {
            var outcomes: Set<[[UInt8]?]> = []
            for seed in UInt64(0)..<8 {
                let first = try workload()
                let second = try workload()
                let firstReport = first.simulatePowerLoss(mode, seed: seed)
                let secondReport = second.simulatePowerLoss(mode, seed: seed)
                #expect(firstReport.description == secondReport.description)
                #expect(first.allFiles() == second.allFiles())
                let contents = ["/db/seg0", "/db/seg1", "/db/seg2", "/db/renamed"].map { first.contents(of: $0) }
                #expect(contents == ["/db/seg0", "/db/seg1", "/db/seg2", "/db/renamed"].map { second.contents(of: $0) })
                outcomes.insert(contents)
            }
            if mode != .dropUnsynced {
                #expect(outcomes.count > 1, "\(mode): different seeds should give different outcomes")
            }
        }
    }

    @Test func reportNamesLostFiles() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/kept", [1])
        try makeSimFile(fs, "/db/lost", [2], syncDirectory: false)
        let report = fs.simulatePowerLoss(.dropUnsynced)
        #expect(report.files.map(\.path) == ["/db/kept", "/db/lost"])
        #expect(report.files.map(\.existsAfterward) == [true, false])
        #expect(report.description.contains("/db/lost: lost"))
    }
}

// MARK: - Fault injection

@Suite("SimulatedFileSystem: fault injection")
struct SimulatedFileSystemFaultTests {
    @Test func nthCallFailsOnlyOnce() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let fd = try fs.openFile("/db/f", mode: .createNew)
        let rule = fs.faults.install(.nthCall(3, of: .write))
        try writeBytes(fs, fd, [1], at: 0)
        try writeBytes(fs, fd, [2], at: 1)
        #expect(throws: Errno.ioError) { try writeBytes(fs, fd, [3], at: 2) }
        try writeBytes(fs, fd, [4], at: 3)
        #expect(fs.contents(of: "/db/f") == [1, 2, 0, 4])  // the failed write wrote nothing
        #expect(fs.faults.failureCount(of: rule) == 1)
        #expect(fs.faults.injectedFaults.map(\.callNumber) == [3])
        #expect(fs.faults.callCount(of: .write) == 4)
    }

    @Test func persistentRuleFailsUntilRemoved() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let rule = fs.faults.install(.fromNthCall(2, of: .synchronizeDirectory, error: .noSpace))
        try fs.synchronizeDirectory("/db")
        for _ in 0..<3 { #expect(throws: Errno.noSpace) { try fs.synchronizeDirectory("/db") } }
        fs.faults.remove(rule)
        try fs.synchronizeDirectory("/db")
        #expect(fs.faults.injectedFaults.count == 3)
    }

    @Test func limitedRepetition() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        fs.faults.install(FaultRule(failing: .createDirectory, trigger: .call(1), repetition: .times(2)))
        #expect(throws: Errno.ioError) { try fs.createDirectory("/db/a") }
        #expect(throws: Errno.ioError) { try fs.createDirectory("/db/a") }
        try fs.createDirectory("/db/a")
    }

    @Test func pathFilterRestrictsRulesAndCounts() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        fs.faults.install(.fromNthCall(1, of: .synchronize, paths: .suffix(".log")))
        let log = try fs.openFile("/db/0001.log", mode: .createNew)
        let manifest = try fs.openFile("/db/MANIFEST", mode: .createNew)
        try fs.synchronize(manifest)
        #expect(throws: Errno.ioError) { try fs.synchronize(log) }
        try fs.synchronize(manifest)
        #expect(fs.faults.callCount(of: .synchronize) == 3)
        #expect(fs.faults.callCount(of: .synchronize, paths: .suffix(".log")) == 1)
        #expect(fs.faults.callCount(of: .synchronize, paths: .exactly("/db/MANIFEST")) == 2)
        #expect(fs.faults.callCount(of: .openFile, paths: .under("/db")) == 2)
        #expect(fs.faults.callCount(of: .openFile, paths: .matching { $0.string.contains("0001") }) == 1)
    }

    @Test func renameRuleMatchesEitherPath() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/a.tmp", [1])
        fs.faults.install(.nthCall(1, of: .rename, paths: .exactly("/db/a")))
        #expect(throws: Errno.ioError) { try fs.rename("/db/a.tmp", to: "/db/a") }
        #expect(fs.allFiles() == ["/db/a.tmp"])  // no side effect
        try fs.rename("/db/a.tmp", to: "/db/a")
        #expect(fs.allFiles() == ["/db/a"])
    }

    @Test func failedCallsHaveNoSideEffects() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        try makeSimFile(fs, "/db/f", [1, 2, 3])
        for operation in [FileSystemOperation.openFile, .removeFile, .truncate, .read, .createDirectory] {
            fs.faults.install(.nthCall(1, of: operation, error: .ioError))
        }
        #expect(throws: Errno.ioError) { try fs.openFile("/db/new", mode: .createNew) }
        #expect(try fs.itemKind(at: "/db/new") == nil)
        #expect(throws: Errno.ioError) { try fs.removeFile("/db/f") }
        #expect(try fs.itemKind(at: "/db/f") == .file)
        let fd = try fs.openFile("/db/f", mode: .readWrite)
        #expect(throws: Errno.ioError) { try fs.truncate(fd, to: 0) }
        var buffer = [UInt8](repeating: 0, count: 3)
        #expect(throws: Errno.ioError) { try buffer.withUnsafeMutableBytes { try fs.read(fd, into: $0, at: 0) } }
        #expect(try readWholeFile(fs, fd) == [1, 2, 3])
        #expect(throws: Errno.ioError) { try fs.createDirectory("/db/d") }
        #expect(try fs.itemKind(at: "/db/d") == nil)
    }

    @Test func failedCloseStillCloses() throws {
        let fs = SimulatedFileSystem(directories: ["/db"])
        let fd = try fs.openFile("/db/f", mode: .createNew)
        fs.faults.install(.nthCall(1, of: .close))
        #expect(throws: Errno.ioError) { try fs.close(fd) }
        #expect(fs.openDescriptorCount == 0)
        #expect(throws: Errno.badFileDescriptor) { try fs.close(fd) }
    }

    @Test func diskFullWritesARandomPrefixThenFails() throws {
        let fs = SimulatedFileSystem(directories: ["/db"], faults: FaultInjector(seed: 11))
        let fd = try fs.openFile("/db/f", mode: .createNew)
        try writeBytes(fs, fd, filled(1, 10), at: 0)
        fs.faults.install(.diskFull(atWrite: 1))
        #expect(throws: Errno.noSpace) { try writeBytes(fs, fd, filled(2, 1000), at: 10) }
        #expect(throws: Errno.noSpace) { try writeBytes(fs, fd, filled(3, 1000), at: 10) }
        let first = try #require(fs.faults.injectedFaults.first?.bytesToWrite)
        #expect(first < 1000)
        let contents = try #require(fs.contents(of: "/db/f"))
        #expect(contents.count >= 10 + first)
        #expect(contents.prefix(10) == filled(1, 10)[...])
    }

    @Test func shortWritesReturnFewerBytesWithoutError() throws {
        let fs = SimulatedFileSystem(directories: ["/db"], faults: FaultInjector(seed: 2))
        let fd = try fs.openFile("/db/f", mode: .createNew)
        fs.faults.install(.shortWrites(fromWrite: 1, paths: .suffix("/f")))
        let record = (0..<200).map { UInt8(truncatingIfNeeded: $0) }
        let written = try writeBytes(fs, fd, record, at: 0)
        #expect(written > 0 && written < record.count)
        #expect(fs.contents(of: "/db/f") == Array(record.prefix(written)))
        // A caller that loops over short writes still gets everything there.
        var done = written
        while done < record.count {
            done += try writeBytes(fs, fd, Array(record[done...]), at: Int64(done))
        }
        #expect(fs.contents(of: "/db/f") == record)
        #expect(try writeBytes(fs, fd, [1], at: 200) == 1)  // one byte cannot be shortened
    }

    @Test func countingThenFailingTheNthOperation() throws {
        // The workflow the crash tests use: count a clean run, then fail
        // each call in turn on a fresh file system.
        func workload(_ fs: SimulatedFileSystem) throws -> Int {
            let fd = try fs.openFile("/db/f", mode: .createNew)
            var written = 0
            for index in 0..<5 {
                try writeBytes(fs, fd, [UInt8(index)], at: Int64(index))
                written += 1
            }
            return written
        }
        let clean = SimulatedFileSystem(directories: ["/db"])
        #expect(try workload(clean) == 5)
        let writes = clean.faults.callCount(of: .write)
        #expect(writes == 5)
        for n in 1...writes {
            let fs = SimulatedFileSystem(directories: ["/db"])
            fs.faults.install(.nthCall(n, of: .write))
            #expect(throws: Errno.ioError) { try workload(fs) }
            #expect(fs.contents(of: "/db/f")?.count == n - 1)
        }
    }

    @Test func randomTriggerIsDeterministicForASeed() throws {
        func pattern(seed: UInt64) throws -> [Bool] {
            let fs = SimulatedFileSystem(directories: ["/db"], faults: FaultInjector(seed: seed))
            fs.faults.install(FaultRule(failing: .write, trigger: .randomly(probability: 0.3), repetition: .always))
            let fd = try fs.openFile("/db/f", mode: .createNew)
            return (0..<64).map { index in (try? writeBytes(fs, fd, [1], at: Int64(index))) == nil }
        }
        let first = try pattern(seed: 5)
        #expect(first == (try pattern(seed: 5)))
        #expect(first.contains(true) && first.contains(false))
        #expect(first != (try pattern(seed: 6)))
    }

    @Test func wrapperAppliesRulesToAnotherFileSystem() throws {
        let base = SimulatedFileSystem(directories: ["/db"])
        let fs = FaultInjectingFileSystem(wrapping: base, faults: FaultInjector(seed: 3))
        fs.faults.install(.nthCall(2, of: .write, paths: .suffix(".log")))
        fs.faults.install(.nthCall(1, of: .synchronize))
        let log = try fs.openFile("/db/a.log", mode: .createNew)
        let data = try fs.openFile("/db/a.dat", mode: .createNew)
        try writeBytes(fs, log, [1], at: 0)
        try writeBytes(fs, data, [1], at: 0)
        try writeBytes(fs, data, [2], at: 1)
        #expect(throws: Errno.ioError) { try writeBytes(fs, log, [2], at: 1) }
        #expect(base.contents(of: "/db/a.log") == [1])
        #expect(base.faults.callCount(of: .write) == 3)  // the failed call never reached the base
        #expect(throws: Errno.ioError) { try fs.synchronize(log) }
        #expect(base.durableContents(of: "/db/a.log") == [])
        try fs.synchronize(log)
        #expect(base.durableContents(of: "/db/a.log") == [1])

        fs.faults.install(.diskFull(atWrite: 1, paths: .exactly("/db/a.dat")))
        #expect(throws: Errno.noSpace) { try writeBytes(fs, data, filled(3, 100), at: 2) }
        let prefix = try #require(fs.faults.injectedFaults.last?.bytesToWrite)
        #expect(base.contents(of: "/db/a.dat") == [1, 2] + filled(3, prefix))

        fs.faults.install(.nthCall(1, of: .close))
        #expect(throws: Errno.ioError) { try fs.close(log) }
        try fs.close(data)
        #expect(base.openDescriptorCount == 0)
    }
}

@Suite("SplitMix64")
struct SplitMix64Tests {
    @Test func isDeterministicAndBounded() {
        var a = SplitMix64(seed: 42)
        var b = SplitMix64(seed: 42)
        #expect((0..<16).map { _ in a.next() } == (0..<16).map { _ in b.next() })
        // Reference value of SplitMix64 for seed 0 (Vigna's reference code).
        var zero = SplitMix64(seed: 0)
        #expect(zero.next() == 0xE220_A839_7B1D_CDAF)
        var counts = [Int](repeating: 0, count: 6)
        for _ in 0..<6000 { counts[a.next(below: 6)] += 1 }
        #expect(counts.allSatisfy { $0 > 850 && $0 < 1150 })
        for _ in 0..<100 { #expect((3...5).contains(a.next(in: 3...5))) }
        let first = SplitMix64.derived(seed: 1, stream: 1)
        let second = SplitMix64.derived(seed: 1, stream: 2)
        #expect(first != second)
    }
}
