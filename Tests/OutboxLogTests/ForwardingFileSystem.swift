import OutboxLog
import SystemPackage

/// A test file system that changes a few calls of `base` and passes every
/// other one through: a conforming type implements only what it changes.
protocol ForwardingFileSystem: FileSystem {
    var base: any FileSystem { get }
}

extension ForwardingFileSystem {
    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor { try base.openFile(path, mode: mode) }
    func close(_ descriptor: FileDescriptor) throws(Errno) { try base.close(descriptor) }
    func read(_ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try base.read(descriptor, into: buffer, at: offset)
    }
    func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try base.write(descriptor, bytes, at: offset)
    }
    func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 { try base.size(of: descriptor) }
    func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) { try base.truncate(descriptor, to: size) }
    func synchronize(_ descriptor: FileDescriptor) throws(Errno) { try base.synchronize(descriptor) }
    func synchronizeDirectory(_ path: FilePath) throws(Errno) { try base.synchronizeDirectory(path) }
    func rename(_ source: FilePath, to destination: FilePath) throws(Errno) { try base.rename(source, to: destination) }
    func removeFile(_ path: FilePath) throws(Errno) { try base.removeFile(path) }
    func createDirectory(_ path: FilePath) throws(Errno) { try base.createDirectory(path) }
    func removeDirectory(_ path: FilePath) throws(Errno) { try base.removeDirectory(path) }
    func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] { try base.contentsOfDirectory(path) }
    func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? { try base.itemKind(at: path) }
    func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) { try base.lockExclusively(descriptor) }
}
