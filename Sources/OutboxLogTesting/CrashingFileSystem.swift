import OutboxLog
import Synchronization
import SystemPackage

/// Simulates the process dying just before its Nth change to the disk.
///
/// Every call passes through to `base` until the Nth *mutating* call
/// (a write, truncate, sync, directory sync, rename, remove, create or
/// open-for-create), or until ``crash()``; that call and every call after
/// it fail with `EIO` without reaching `base` — except `close`, which still
/// releases the descriptor (and its lock), as the kernel does for a dead
/// process. Pair it with a
/// ``SimulatedFileSystem`` as `base`: after the "crash", call
/// ``SimulatedFileSystem/simulateProcessCrash()`` or
/// ``SimulatedFileSystem/simulatePowerLoss(_:seed:)`` on the base and reopen
/// the log on it. Running a workload once with `crashAt: nil` counts its
/// mutating calls (``mutatingCalls``), so a test can crash at every one.
public final class CrashingFileSystem: FileSystem, Sendable {
    public let base: any FileSystem
    private let state: Mutex<(count: Int, crashAt: Int?, crashed: Bool)>

    /// - Parameter crashAt: the 1-based mutating call that does not happen;
    ///   `nil` never crashes (just counts).
    public init(base: any FileSystem, crashAt: Int?) {
        self.base = base
        self.state = Mutex((0, crashAt, false))
    }

    /// Mutating calls that went through (or were attempted, once crashed).
    public var mutatingCalls: Int { state.withLock { $0.count } }

    /// Whether the crash point has been reached.
    public var hasCrashed: Bool { state.withLock { $0.crashed } }

    /// Crashes now: nothing reaches the disk any more.
    public func crash() { state.withLock { $0.crashed = true } }

    private func pass(mutating: Bool) throws(Errno) {
        let dead = state.withLock { state -> Bool in
            if state.crashed { return true }
            guard mutating else { return false }
            state.count += 1
            if let crashAt = state.crashAt, state.count >= crashAt {
                state.crashed = true
                return true
            }
            return false
        }
        if dead { throw .ioError }
    }

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        try pass(mutating: mode == .createOrOpen || mode == .createNew)
        return try base.openFile(path, mode: mode)
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        // A dead process's descriptors are closed by the kernel.
        try base.close(descriptor)
    }

    public func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        try pass(mutating: false)
        return try base.read(descriptor, into: buffer, at: offset)
    }

    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        try pass(mutating: true)
        return try base.write(descriptor, bytes, at: offset)
    }

    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        try pass(mutating: false)
        return try base.size(of: descriptor)
    }

    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try pass(mutating: true)
        try base.truncate(descriptor, to: size)
    }

    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        try pass(mutating: true)
        try base.synchronize(descriptor)
    }

    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        try pass(mutating: true)
        try base.synchronizeDirectory(path)
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try pass(mutating: true)
        try base.rename(source, to: destination)
    }

    public func removeFile(_ path: FilePath) throws(Errno) {
        try pass(mutating: true)
        try base.removeFile(path)
    }

    public func createDirectory(_ path: FilePath) throws(Errno) {
        try pass(mutating: true)
        try base.createDirectory(path)
    }

    public func removeDirectory(_ path: FilePath) throws(Errno) {
        try pass(mutating: true)
        try base.removeDirectory(path)
    }

    public func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        try pass(mutating: false)
        return try base.contentsOfDirectory(path)
    }

    public func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        try pass(mutating: false)
        return try base.itemKind(at: path)
    }

    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try pass(mutating: false)
        try base.lockExclusively(descriptor)
    }
}
