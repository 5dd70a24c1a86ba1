import OutboxLog
import OutboxLogTesting
import SystemPackage

/// Passes every call through to `base`, calling `hook` with the operation
/// first (to count calls, or to hold one up).
final class HookedFileSystem: FileSystem, Sendable {
    let base: any FileSystem
    let hook: @Sendable (FileSystemOperation) -> Void

    init(base: any FileSystem, hook: @escaping @Sendable (FileSystemOperation) -> Void) {
        self.base = base
        self.hook = hook
    }

    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        hook(.openFile)
        return try base.openFile(path, mode: mode)
    }
    func close(_ descriptor: FileDescriptor) throws(Errno) {
        hook(.close)
        try base.close(descriptor)
    }
    func read(_ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        hook(.read)
        return try base.read(descriptor, into: buffer, at: offset)
    }
    func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        hook(.write)
        return try base.write(descriptor, bytes, at: offset)
    }
    func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        hook(.size)
        return try base.size(of: descriptor)
    }
    func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        hook(.truncate)
        try base.truncate(descriptor, to: size)
    }
    func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        hook(.synchronize)
        try base.synchronize(descriptor)
    }
    func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        hook(.synchronizeDirectory)
        try base.synchronizeDirectory(path)
    }
    func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        hook(.rename)
        try base.rename(source, to: destination)
    }
    func removeFile(_ path: FilePath) throws(Errno) {
        hook(.removeFile)
        try base.removeFile(path)
    }
    func createDirectory(_ path: FilePath) throws(Errno) {
        hook(.createDirectory)
        try base.createDirectory(path)
    }
    func removeDirectory(_ path: FilePath) throws(Errno) {
        hook(.removeDirectory)
        try base.removeDirectory(path)
    }
    func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        hook(.contentsOfDirectory)
        return try base.contentsOfDirectory(path)
    }
    func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        hook(.itemKind)
        return try base.itemKind(at: path)
    }
    func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        hook(.lockExclusively)
        try base.lockExclusively(descriptor)
    }
}
