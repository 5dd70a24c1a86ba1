import OutboxLog
import SystemPackage

/// A file system that passes every call on to ``base``, through one
/// interception point: a conforming type implements only what it changes.
///
/// Every requirement of `FileSystem` but two has a default here that calls
/// ``intercept(_:paths:_:)`` with the ``FileSystemOperation`` it stands for,
/// the paths it names, and the call to ``base``:
/// - path calls name their paths (`rename`: source, then destination);
/// - descriptor calls (`close`, `read`, `write`, `size`, `truncate`,
///   `synchronize`, `lockExclusively`) name ``paths(of:)`` of the
///   descriptor, none unless the type tracks them.
///
/// The two others:
/// - `adviseWillRead` is passed straight to ``base``, never intercepted:
///   it is a hint, and a hint is never failed;
/// - `openAndLock` keeps `FileSystem`'s default, which opens and locks
///   through this wrapper's `openFile` and `lockExclusively`, so both are
///   intercepted (it is not passed to `base.openAndLock`).
///
/// A type that changes one call beyond what ``intercept(_:paths:_:)`` can
/// (a partial write, a close that always releases the descriptor)
/// implements that method itself.
public protocol ForwardingFileSystem: FileSystem {
    /// The file system calls are passed on to.
    var base: any FileSystem { get }

    /// Runs `call` (the call to ``base``) for `operation` on `paths`, and
    /// returns its result. The default just runs it; a wrapper may count the
    /// call, hold it up, or throw instead of (or after) running it.
    func intercept<T>(
        _ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T
    ) throws(Errno) -> T

    /// The paths a descriptor call names: the default names none; a wrapper
    /// that tracks the path each descriptor was opened with returns it.
    func paths(of descriptor: FileDescriptor) -> [FilePath]
}

extension ForwardingFileSystem {
    /// Runs the call unchanged.
    public func intercept<T>(
        _ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T
    ) throws(Errno) -> T {
        try call()
    }

    /// None: descriptors are not tracked.
    public func paths(of descriptor: FileDescriptor) -> [FilePath] { [] }

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        try intercept(.openFile, paths: [path]) { () throws(Errno) in try base.openFile(path, mode: mode) }
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        try intercept(.close, paths: paths(of: descriptor)) { () throws(Errno) in try base.close(descriptor) }
    }

    public func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        try intercept(.read, paths: paths(of: descriptor)) { () throws(Errno) in
            try base.read(descriptor, into: buffer, at: offset)
        }
    }

    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        try intercept(.write, paths: paths(of: descriptor)) { () throws(Errno) in
            try base.write(descriptor, bytes, at: offset)
        }
    }

    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        try intercept(.size, paths: paths(of: descriptor)) { () throws(Errno) in try base.size(of: descriptor) }
    }

    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try intercept(.truncate, paths: paths(of: descriptor)) { () throws(Errno) in
            try base.truncate(descriptor, to: size)
        }
    }

    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        try intercept(.synchronize, paths: paths(of: descriptor)) { () throws(Errno) in
            try base.synchronize(descriptor)
        }
    }

    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        try intercept(.synchronizeDirectory, paths: [path]) { () throws(Errno) in try base.synchronizeDirectory(path) }
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try intercept(.rename, paths: [source, destination]) { () throws(Errno) in
            try base.rename(source, to: destination)
        }
    }

    public func removeFile(_ path: FilePath) throws(Errno) {
        try intercept(.removeFile, paths: [path]) { () throws(Errno) in try base.removeFile(path) }
    }

    public func createDirectory(_ path: FilePath) throws(Errno) {
        try intercept(.createDirectory, paths: [path]) { () throws(Errno) in try base.createDirectory(path) }
    }

    public func removeDirectory(_ path: FilePath) throws(Errno) {
        try intercept(.removeDirectory, paths: [path]) { () throws(Errno) in try base.removeDirectory(path) }
    }

    public func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        try intercept(.contentsOfDirectory, paths: [path]) { () throws(Errno) in try base.contentsOfDirectory(path) }
    }

    public func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        try intercept(.itemKind, paths: [path]) { () throws(Errno) in try base.itemKind(at: path) }
    }

    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try intercept(.lockExclusively, paths: paths(of: descriptor)) { () throws(Errno) in
            try base.lockExclusively(descriptor)
        }
    }

    /// Passes the hint on, never intercepted: a hint is never failed.
    public func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64) {
        base.adviseWillRead(descriptor, offset: offset, length: length)
    }
}
