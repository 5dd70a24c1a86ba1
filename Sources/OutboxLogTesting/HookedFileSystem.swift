import OutboxLocking
import OutboxLog
import SystemPackage

/// Passes every call through to `base`, calling `hook` with the operation
/// and the paths it names (for a descriptor: none) first — to count calls,
/// hold one up, or make it fail with the errno the hook returns.
public final class HookedFileSystem: FileSystem, Sendable {
    public let base: any FileSystem
    public let hook: @Sendable (FileSystemOperation, [FilePath]) -> Errno?
    /// Every read-ahead hint given, in order: (descriptor, offset, length).
    package let readAdvice = Locked<[(descriptor: Int32, offset: Int64, length: Int64)]>([])

    public init(base: any FileSystem, hook: @escaping @Sendable (FileSystemOperation, [FilePath]) -> Errno?) {
        self.base = base
        self.hook = hook
    }

    /// A hook that never fails a call.
    public convenience init(base: any FileSystem, observe: @escaping @Sendable (FileSystemOperation) -> Void) {
        self.init(base: base) { operation, _ in
            observe(operation)
            return nil
        }
    }

    private func check(_ operation: FileSystemOperation, _ paths: [FilePath] = []) throws(Errno) {
        if let error = hook(operation, paths) { throw error }
    }

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        try check(.openFile, [path])
        return try base.openFile(path, mode: mode)
    }
    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        try check(.close)
        try base.close(descriptor)
    }
    public func read(_ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try check(.read)
        return try base.read(descriptor, into: buffer, at: offset)
    }
    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try check(.write)
        return try base.write(descriptor, bytes, at: offset)
    }
    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        try check(.size)
        return try base.size(of: descriptor)
    }
    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try check(.truncate)
        try base.truncate(descriptor, to: size)
    }
    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        try check(.synchronize)
        try base.synchronize(descriptor)
    }
    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        try check(.synchronizeDirectory, [path])
        try base.synchronizeDirectory(path)
    }
    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        try check(.rename, [source, destination])
        try base.rename(source, to: destination)
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
    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try check(.lockExclusively)
        try base.lockExclusively(descriptor)
    }
    public func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64) {
        readAdvice.withLock { $0.append((descriptor.rawValue, offset, length)) }
        base.adviseWillRead(descriptor, offset: offset, length: length)
    }
}
