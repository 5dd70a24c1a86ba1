import OutboxLog
import OutboxLocking
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Simulates the process dying just before its Nth change to the disk.
///
/// Every call passes through to `base` until the Nth *mutating* call
/// (a write, truncate, sync, directory sync, rename, remove, create or
/// open-for-create), or until ``crash()``; that call and every call after
/// it fail with `EIO` without reaching `base` — except `close`, which still
/// releases the descriptor (and its lock), as the kernel does for a dead
/// process. ``crash()`` returns only once no call is still inside `base`:
/// after it, the dead process can change nothing, even from a thread that
/// was in the middle of a call (a compaction's rename, say) when it died. Pair it with a
/// ``SimulatedFileSystem`` as `base`: after the "crash", call
/// ``SimulatedFileSystem/simulateProcessCrash()`` or
/// ``SimulatedFileSystem/simulatePowerLoss(_:seed:)`` on the base and reopen
/// the log on it. Running a workload once with `crashAt: nil` counts its
/// mutating calls (``mutatingCalls``), so a test can crash at every one.
public final class CrashingFileSystem: FileSystem, Sendable {
    public let base: any FileSystem
    private let state: Locked<(count: Int, crashAt: Int?, crashed: Bool, inFlight: Int)>

    /// - Parameter crashAt: the 1-based mutating call that does not happen;
    ///   `nil` never crashes (just counts).
    public init(base: any FileSystem, crashAt: Int?) {
        self.base = base
        self.state = Locked((0, crashAt, false, 0))
    }

    /// Mutating calls that went through (or were attempted, once crashed).
    public var mutatingCalls: Int { state.withLock { $0.count } }

    /// Whether the crash point has been reached.
    public var hasCrashed: Bool { state.withLock { $0.crashed } }

    /// Crashes now: nothing reaches the disk any more. Waits for the calls
    /// already inside `base` to return (they happened before the death).
    public func crash() {
        state.withLock { $0.crashed = true }
        while state.withLock({ $0.inFlight }) > 0 { sched_yield() }
    }

    /// Runs `body` (the call to `base`) unless the process is dead; counts
    /// it as in flight meanwhile, so ``crash()`` can wait for it.
    private func pass<T>(mutating: Bool, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        let dead = state.withLock { state -> Bool in
            if state.crashed { return true }
            if mutating {
                state.count += 1
                if let crashAt = state.crashAt, state.count >= crashAt {
                    state.crashed = true
                    return true
                }
            }
            state.inFlight += 1
            return false
        }
        if dead { throw .ioError }
        defer { state.withLock { $0.inFlight -= 1 } }
        return try body()
    }

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        return try pass(mutating: mode == .createOrOpen || mode == .createNew) { () throws(Errno) in
            try base.openFile(path, mode: mode)
        }
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        // A dead process's descriptors are closed by the kernel.
        try base.close(descriptor)
    }

    public func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        return try pass(mutating: false) { () throws(Errno) in
            try base.read(descriptor, into: buffer, at: offset)
        }
    }

    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        return try pass(mutating: true) { () throws(Errno) in
            try base.write(descriptor, bytes, at: offset)
        }
    }

    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        return try pass(mutating: false) { () throws(Errno) in
            try base.size(of: descriptor)
        }
    }

    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.truncate(descriptor, to: size)
        }
    }

    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.synchronize(descriptor)
        }
    }

    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.synchronizeDirectory(path)
        }
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.rename(source, to: destination)
        }
    }

    public func removeFile(_ path: FilePath) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.removeFile(path)
        }
    }

    public func createDirectory(_ path: FilePath) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.createDirectory(path)
        }
    }

    public func removeDirectory(_ path: FilePath) throws(Errno) {
        try pass(mutating: true) { () throws(Errno) in
            try base.removeDirectory(path)
        }
    }

    public func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        return try pass(mutating: false) { () throws(Errno) in
            try base.contentsOfDirectory(path)
        }
    }

    public func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        return try pass(mutating: false) { () throws(Errno) in
            try base.itemKind(at: path)
        }
    }

    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try pass(mutating: false) { () throws(Errno) in
            try base.lockExclusively(descriptor)
        }
    }
}
