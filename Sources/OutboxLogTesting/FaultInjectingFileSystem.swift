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
public final class FaultInjectingFileSystem: FileSystem, Sendable {
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

    private func paths(of descriptor: FileDescriptor) -> [FilePath] {
        openPaths.withLock { $0[descriptor.rawValue].map { [$0] } ?? [] }
    }

    private func check(_ operation: FileSystemOperation, _ paths: [FilePath]) throws(Errno) {
        try faults.check(operation, paths: paths)
    }

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        try check(.openFile, [path])
        let descriptor = try base.openFile(path, mode: mode)
        openPaths.withLock { $0[descriptor.rawValue] = path }
        return descriptor
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        let fault = faults.intercept(.close, paths: paths(of: descriptor))
        openPaths.withLock { $0[descriptor.rawValue] = nil }
        try base.close(descriptor)
        if let error = fault?.error { throw error }
    }

    public func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        try check(.read, paths(of: descriptor))
        return try base.read(descriptor, into: buffer, at: offset)
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

    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        try check(.size, paths(of: descriptor))
        return try base.size(of: descriptor)
    }

    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try check(.truncate, paths(of: descriptor))
        try base.truncate(descriptor, to: size)
    }

    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        try check(.synchronize, paths(of: descriptor))
        try base.synchronize(descriptor)
    }

    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        try check(.synchronizeDirectory, [path])
        try base.synchronizeDirectory(path)
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try check(.rename, [source, destination])
        try base.rename(source, to: destination)
        openPaths.withLock { paths in
            for (number, path) in paths {
                if let moved = path.renamed(from: source, to: destination) { paths[number] = moved }
            }
        }
    }

    public func removeFile(_ path: FilePath) throws(Errno) {
        try check(.removeFile, [path])
        try base.removeFile(path)
    }

    public func createDirectory(_ path: FilePath) throws(Errno) {
        try check(.createDirectory, [path])
        try base.createDirectory(path)
    }

    public func removeDirectory(_ path: FilePath) throws(Errno) {
        try check(.removeDirectory, [path])
        try base.removeDirectory(path)
    }

    public func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        try check(.contentsOfDirectory, [path])
        return try base.contentsOfDirectory(path)
    }

    public func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        try check(.itemKind, [path])
        return try base.itemKind(at: path)
    }

    /// Passes the hint on: a hint is not an operation that can fail.
    public func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64) {
        base.adviseWillRead(descriptor, offset: offset, length: length)
    }

    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try check(.lockExclusively, paths(of: descriptor))
        try base.lockExclusively(descriptor)
    }
}
