import OutboxLog
import OutboxLocking
import SystemPackage

/// Wraps any `FileSystem` (typically the real `PosixFileSystem`) and applies
/// ``FaultRule``s from a ``FaultInjector`` to its calls, for tests on a real
/// disk.
///
/// A call that a rule fails is not passed on, with these exceptions, which
/// mirror what the failed system call would have done:
/// - ``FaultRule/Effect/failAfterPartialWrite(_:)`` passes on a random
///   prefix of the bytes, then throws;
/// - ``FaultRule/Effect/shortWrite`` passes on a random prefix and returns
///   what the base wrote;
/// - a failed `close` closes the underlying descriptor, then throws.
///
/// Unlike ``SimulatedFileSystem``, this wrapper cannot make the kernel
/// forget dirty pages: after an injected `synchronize` failure the data may
/// still reach the disk. Tests of what survives a failed fsync belong on
/// the simulated file system.
///
/// Path filters on descriptor operations see the path the descriptor was
/// opened with *through this wrapper*, updated by renames made through it;
/// descriptors opened elsewhere have an unknown path and match only
/// ``PathFilter/any``.
public final class FaultInjectingFileSystem: ForwardingFileSystem, Sendable {
    /// The file system calls are forwarded to.
    public let base: any FileSystem
    /// The rules and counters applied to every call.
    public let faults: FaultInjector

    /// Descriptor → path it was opened with, for path filters.
    private let openPaths = Locked<[CInt: FilePath]>([:])

    /// Wraps `base`; pass an existing `faults` to share rules and counters
    /// with another file system.
    public init(wrapping base: any FileSystem, faults: FaultInjector = FaultInjector()) {
        self.base = base
        self.faults = faults
    }

    /// The path `descriptor` was opened with through this wrapper, if known.
    public func paths(of descriptor: FileDescriptor) -> [FilePath] {
        openPaths.withLock { $0[descriptor.rawValue].map { [$0] } ?? [] }
    }

    /// Applies the rules: a call a rule fails is not passed on.
    public func intercept<T>(
        _ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T
    ) throws(Errno) -> T {
        try faults.check(operation, paths: paths)
        return try call()
    }

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let descriptor = try intercept(.openFile, paths: [path]) { () throws(Errno) in
            try base.openFile(path, mode: mode)
        }
        openPaths.withLock { $0[descriptor.rawValue] = path }
        return descriptor
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        let fault = faults.intercept(.close, paths: paths(of: descriptor))
        openPaths.withLock { $0[descriptor.rawValue] = nil }
        try base.close(descriptor)
        if let error = fault?.error { throw error }
    }

    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        if let fault = faults.intercept(.write, paths: paths(of: descriptor), byteCount: bytes.count) {
            let prefix = UnsafeRawBufferPointer(rebasing: bytes[..<(fault.bytesToWrite ?? 0)])
            guard let error = fault.error else {
                return try base.write(descriptor, prefix, at: offset)  // a short write
            }
            // Best effort: the injected error is what the caller sees.
            var done = 0
            while done < prefix.count {
                let rest = UnsafeRawBufferPointer(rebasing: prefix[done...])
                guard let n = try? base.write(descriptor, rest, at: offset + Int64(done)), n > 0 else { break }
                done += n
            }
            throw error
        }
        return try base.write(descriptor, bytes, at: offset)
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try intercept(.rename, paths: [source, destination]) { () throws(Errno) in
            try base.rename(source, to: destination)
        }
        openPaths.withLock { paths in
            for (number, path) in paths {
                if let moved = path.renamed(from: source, to: destination) { paths[number] = moved }
            }
        }
    }
}
