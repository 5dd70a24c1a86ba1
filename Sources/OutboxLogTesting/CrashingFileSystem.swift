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
public final class CrashingFileSystem: ForwardingFileSystem, Sendable {
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

    /// The calls that change the disk (an open changes it only when it may
    /// create: see ``openFile(_:mode:)``).
    private static func isMutating(_ operation: FileSystemOperation) -> Bool {
        switch operation {
        case .write, .truncate, .synchronize, .synchronizeDirectory, .rename, .removeFile, .createDirectory,
            .removeDirectory:
            return true
        case .openFile, .close, .read, .size, .contentsOfDirectory, .itemKind, .lockExclusively:
            return false
        }
    }

    /// Passes the call on unless the process is dead; a mutating call counts
    /// towards `crashAt`.
    public func intercept<T>(
        _ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T
    ) throws(Errno) -> T {
        try pass(mutating: Self.isMutating(operation), call)
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

    /// Mutating only when it may create the file.
    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        return try pass(mutating: mode == .createOrOpen || mode == .createNew) { () throws(Errno) in
            try base.openFile(path, mode: mode)
        }
    }

    /// Always passes, even once crashed: a dead process's descriptors are
    /// closed by the kernel.
    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        try base.close(descriptor)
    }
}
