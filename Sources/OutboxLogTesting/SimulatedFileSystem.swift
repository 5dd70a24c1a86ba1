import OutboxLog
import OutboxLocking
import SystemPackage

/// An in-memory `FileSystem` that knows exactly what a process crash and a
/// power loss would keep, and can inject faults.
///
/// It plays the part of LevelDB's `FaultInjectionTestEnv`, RocksDB's
/// `FaultInjectionTestFS` and SQLite's crash VFS for the engine's tests and
/// the `outbox torture` driver.
///
/// ## Two images of everything
/// Each regular file has a *visible* image (the page cache: what `read`
/// returns) and a *durable* image (what is on stable storage). `write` and
/// `truncate` change the visible image at once and are logged as unsynced
/// operations; a successful ``synchronize(_:)`` makes them durable.
///
/// Each directory likewise has visible and durable entries. Creating,
/// renaming and removing files and directories is visible at once, but
/// durable only after ``synchronizeDirectory(_:)`` of the directory holding
/// the entry — of both directories for a rename across directories. A file
/// whose own directory entry never became durable is lost on power loss even
/// if its data was synced; a directory whose entry in its parent is not
/// durable is lost with everything in it.
///
/// ## Crashes
/// - ``simulateProcessCrash()`` (`kill -9`): every descriptor is closed and
///   every lock released; contents and names stay exactly as reads saw them,
///   because the kernel still holds the page cache.
/// - ``simulatePowerLoss(_:seed:)``: additionally rebuilds every file and
///   directory from its durable image plus some of its unsynced operations,
///   chosen by a ``PowerLossMode`` and a seed.
///
/// ## fsyncgate
/// When an injected fault makes ``synchronize(_:)`` fail, the file's
/// unsynced operations are dropped from what can ever become durable, while
/// reads keep returning them — what Linux does after a writeback error (it
/// marks the pages clean). A later successful sync does not bring them
/// back; only writing the bytes again does. This is what lets a test prove
/// that the engine never trusts a retried fsync.
///
/// ## Other POSIX details modelled
/// - An unlinked file stays readable and writable through descriptors that
///   are still open; its storage is reclaimed once nothing (no descriptor,
///   no name, and no name a power loss could bring back) refers to it.
/// - `lockExclusively` has `flock(2)` semantics: the lock belongs to the
///   open file description; a second description gets `EWOULDBLOCK`;
///   locking again through the holder succeeds; closing the holder (or a
///   crash) releases it.
/// - Descriptor numbers are fake (from 10 000 up) and never reused, so a
///   descriptor used after `close` or after a crash fails with `EBADF`.
/// - Paths must be absolute (`EINVAL` otherwise); `.` and `..` are resolved
///   lexically. There are no symbolic links, permissions or timestamps.
/// - Files are limited to 1 GiB (`EFBIG` beyond): the bytes live in
///   memory, and a runaway offset should fail the test, not exhaust the
///   machine.
/// - `contentsOfDirectory` returns names sorted (a real directory's order
///   is unspecified).
///
/// ## Faults
/// Every call is counted and checked against the rules of ``faults`` first
/// (see ``FaultRule``); an injected failure has the side effects its system
/// call would have, and no others.
///
/// ## Concurrency
/// Every method may be called from any thread: one lock protects the whole
/// state, so each call is atomic with respect to the others. The class has
/// reference semantics on purpose: the engine under test and the test
/// share one instance; use ``snapshot()`` for an independent copy.
public final class SimulatedFileSystem: FileSystem, Sendable {
    /// The fault rules and call counters applied to every call.
    public let faults: FaultInjector

    let state: Locked<SimulatedState>

    /// Creates an empty file system holding only the root directory `/`,
    /// which is always durable. Each path in `directories` is then created
    /// (with missing parents) and made durable, as a test fixture would find
    /// them on a real machine.
    public init(directories: [FilePath] = [], faults: FaultInjector = FaultInjector()) {
        self.faults = faults
        var initial = SimulatedState()
        for directory in directories {
            do {
                try initial.createDurableDirectories(directory)
            } catch {
                preconditionFailure("cannot create directory \(directory): \(error)")
            }
        }
        state = Locked(initial)
    }

    init(state: SimulatedState, faults: FaultInjector) {
        self.faults = faults
        self.state = Locked(state)
    }

    // MARK: Descriptors

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        try state.withLock { state throws(Errno) in
            try faults.check(.openFile, paths: [path])
            let names = try SimulatedState.names(in: path)
            guard let name = names.last else { throw .isDirectory }  // "/"
            let parent = try state.parentDirectory(of: names)
            var node = state.directories[parent]!.entries[name]
            switch mode {
            case .readOnly, .readWrite:
                guard node != nil else { throw .noSuchFileOrDirectory }
            case .createOrOpen:
                break
            case .createNew:
                guard node == nil else { throw .fileExists }  // O_EXCL: even for a directory
            }
            // open(2) allows O_RDONLY on a directory, but a descriptor on a
            // directory is no use through this protocol: refuse it.
            if let existing = node, state.directories[existing] != nil { throw .isDirectory }
            if node == nil {
                let id = state.allocateNodeID()
                state.files[id] = FileNode()
                state.directories[parent]!.perform(.link(name: name, node: id))
                node = id
            }
            let descriptor = state.nextDescriptor
            state.nextDescriptor += 1
            state.descriptors[descriptor] = OpenFile(node: node!, path: path, writable: mode != .readOnly)
            return FileDescriptor(rawValue: descriptor)
        }
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        try state.withLock { state throws(Errno) in
            let fault = faults.intercept(.close, paths: state.pathsOf(descriptor))
            guard state.descriptors[descriptor.rawValue] != nil else { throw .badFileDescriptor }
            state.close(descriptor.rawValue)
            state.collectGarbage()
            // Linux closes the descriptor even when close(2) reports an error.
            if let error = fault?.error { throw error }
        }
    }

    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.lockExclusively, paths: state.pathsOf(descriptor))
            let open = try state.openFile(descriptor)
            if let holder = state.lockHolders[open.node], holder != descriptor.rawValue { throw .wouldBlock }
            state.lockHolders[open.node] = descriptor.rawValue
        }
    }

    // MARK: File data

    public func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        try state.withLock { state throws(Errno) in
            try faults.check(.read, paths: state.pathsOf(descriptor))
            let open = try state.openFile(descriptor)
            guard offset >= 0 else { throw .invalidArgument }
            let bytes = state.files[open.node]!.visible
            guard offset < bytes.count, buffer.count > 0 else { return 0 }
            let start = Int(offset)
            let count = min(buffer.count, bytes.count - start)
            bytes.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: count)
            }
            return count
        }
    }

    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        try state.withLock { state throws(Errno) in
            if let fault = faults.intercept(.write, paths: state.pathsOf(descriptor), byteCount: bytes.count) {
                guard let error = fault.error else {
                    // A short write: carry on with fewer bytes.
                    let count = fault.bytesToWrite ?? bytes.count
                    return try state.write(descriptor, UnsafeRawBufferPointer(rebasing: bytes[..<count]), at: offset)
                }
                // ENOSPC-style: part of the data may reach the page cache
                // before the call fails (if the write itself is valid).
                if let prefix = fault.bytesToWrite, prefix > 0 {
                    _ = try? state.write(descriptor, UnsafeRawBufferPointer(rebasing: bytes[..<prefix]), at: offset)
                }
                throw error
            }
            return try state.write(descriptor, bytes, at: offset)
        }
    }

    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        try state.withLock { state throws(Errno) in
            try faults.check(.size, paths: state.pathsOf(descriptor))
            let open = try state.openFile(descriptor)
            return Int64(state.files[open.node]!.visible.count)
        }
    }

    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.truncate, paths: state.pathsOf(descriptor))
            let open = try state.openFile(descriptor)
            guard open.writable else { throw .badFileDescriptor }
            guard size >= 0 else { throw .invalidArgument }
            guard size <= SimulatedState.maximumFileSize else { throw .fileTooLarge }
            state.files[open.node]!.perform(.truncate(size: Int(size)))
        }
    }

    /// Makes the file's unsynced writes and truncates durable (its size
    /// included). Does not make its directory entry durable.
    ///
    /// If a fault rule makes this fail, the file's unsynced operations are
    /// dropped from what can ever become durable (see "fsyncgate" above).
    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        try state.withLock { state throws(Errno) in
            if let error = faults.intercept(.synchronize, paths: state.pathsOf(descriptor))?.error {
                if let open = try? state.openFile(descriptor) { state.files[open.node]!.failSynchronize() }
                throw error
            }
            let open = try state.openFile(descriptor)
            state.files[open.node]!.synchronize()
        }
    }

    // MARK: Namespace

    /// Makes the entries of the directory at `path` durable, exactly as they
    /// are now. An injected failure changes nothing: the changes stay
    /// unsynced and may or may not survive a power loss.
    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.synchronizeDirectory, paths: [path])
            let directory = try state.directory(at: path)
            state.directories[directory]!.synchronize()
            state.collectGarbage()
        }
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.rename, paths: [source, destination])
            try state.rename(source, to: destination)
        }
    }

    public func removeFile(_ path: FilePath) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.removeFile, paths: [path])
            let names = try SimulatedState.names(in: path)
            guard let name = names.last else { throw .isDirectory }
            let parent = try state.parentDirectory(of: names)
            guard let node = state.directories[parent]!.entries[name] else { throw .noSuchFileOrDirectory }
            guard state.files[node] != nil else { throw .isDirectory }  // Linux's unlink(2) on a directory
            state.directories[parent]!.perform(.unlink(name: name))
        }
    }

    public func createDirectory(_ path: FilePath) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.createDirectory, paths: [path])
            try state.createDirectory(path)
        }
    }

    public func removeDirectory(_ path: FilePath) throws(Errno) {
        try state.withLock { state throws(Errno) in
            try faults.check(.removeDirectory, paths: [path])
            let names = try SimulatedState.names(in: path)
            guard let name = names.last else { throw .resourceBusy }  // "/"
            let parent = try state.parentDirectory(of: names)
            guard let node = state.directories[parent]!.entries[name] else { throw .noSuchFileOrDirectory }
            guard let directory = state.directories[node] else { throw .notDirectory }
            guard directory.entries.isEmpty else { throw .directoryNotEmpty }
            state.directories[parent]!.perform(.unlink(name: name))
        }
    }

    public func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        try state.withLock { state throws(Errno) in
            try faults.check(.contentsOfDirectory, paths: [path])
            let directory = try state.directory(at: path)
            return state.directories[directory]!.entries.keys.sorted()
        }
    }

    public func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        try state.withLock { state throws(Errno) in
            try faults.check(.itemKind, paths: [path])
            let node: NodeID?
            do throws(Errno) {
                node = try state.node(at: SimulatedState.names(in: path))
            } catch where error == .noSuchFileOrDirectory || error == .notDirectory {
                return nil  // as stat(2)'s ENOENT/ENOTDIR in PosixFileSystem
            }
            guard let node else { return nil }
            return state.directories[node] != nil ? .directory : .file
        }
    }
}
