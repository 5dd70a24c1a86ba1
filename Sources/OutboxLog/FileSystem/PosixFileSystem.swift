import OutboxLocking
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system: each method is one POSIX system call.
///
/// `synchronize` is `fdatasync(2)` on Linux and `fcntl(F_FULLFSYNC)` on
/// Apple platforms (plain `fsync` there leaves data in the drive's cache).
/// Where `F_FULLFSYNC` is not supported by the file system (some network and
/// FAT volumes answer `ENOTSUP`/`EINVAL`), it falls back to `fsync`, as
/// SQLite does; that is not a retry of a failed flush, because nothing was
/// flushed.
public struct PosixFileSystem: FileSystem {
    public init() {}

    public func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor {
        let ownerOnly: FilePermissions = [.ownerRead, .ownerWrite]
        return try retryOnInterrupt { () throws(Errno) -> FileDescriptor in
            do {
                switch mode {
                case .readOnly:
                    return try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
                case .readWrite:
                    return try FileDescriptor.open(path, .readWrite, options: [.closeOnExec])
                case .createOrOpen:
                    return try FileDescriptor.open(
                        path, .readWrite, options: [.create, .closeOnExec], permissions: ownerOnly)
                case .createNew:
                    return try FileDescriptor.open(
                        path, .readWrite, options: [.create, .exclusiveCreate, .closeOnExec], permissions: ownerOnly)
                }
            } catch let error as Errno {
                throw error
            } catch {
                throw Errno.ioError
            }
        }
    }

    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        ProcessLocks.release(descriptor)
        // close(2) must not be retried on EINTR: the descriptor is gone.
        do { try descriptor.close() } catch let error as Errno { throw error } catch { throw Errno.ioError }
    }

    public func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        try retryOnInterrupt { () throws(Errno) -> Int in
            let n = pread(descriptor.rawValue, buffer.baseAddress, buffer.count, off_t(offset))
            if n < 0 { throw Errno(rawValue: errno) }
            return n
        }
    }

    public func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        try retryOnInterrupt { () throws(Errno) -> Int in
            let n = pwrite(descriptor.rawValue, bytes.baseAddress, bytes.count, off_t(offset))
            if n < 0 { throw Errno(rawValue: errno) }
            return n
        }
    }

    public func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64) {
        #if canImport(Glibc) || canImport(Musl)
        // Starts the reads and returns; the result is only a hint's.
        _ = posix_fadvise(descriptor.rawValue, off_t(offset), off_t(length), Int32(POSIX_FADV_WILLNEED))
        #endif
    }

    public func size(of descriptor: FileDescriptor) throws(Errno) -> Int64 {
        var info = stat()
        if fstat(descriptor.rawValue, &info) != 0 { throw Errno(rawValue: errno) }
        return Int64(info.st_size)
    }

    public func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno) {
        try retryOnInterrupt { () throws(Errno) in
            if ftruncate(descriptor.rawValue, off_t(size)) != 0 { throw Errno(rawValue: errno) }
        }
    }

    public func synchronize(_ descriptor: FileDescriptor) throws(Errno) {
        // Never retried, not even on EINTR: after a failed flush the kernel
        // may have dropped the dirty pages, and a second call would report a
        // success that means nothing (PostgreSQL's "fsyncgate").
        #if canImport(Darwin)
        if fcntl(descriptor.rawValue, F_FULLFSYNC) == 0 { return }
        let failure = errno
        guard failure == ENOTSUP || failure == EINVAL else { throw Errno(rawValue: failure) }
        if fsync(descriptor.rawValue) != 0 { throw Errno(rawValue: errno) }
        #else
        if fdatasync(descriptor.rawValue) != 0 { throw Errno(rawValue: errno) }
        #endif
    }

    public func synchronizeDirectory(_ path: FilePath) throws(Errno) {
        let fd = path.withPlatformString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        if fd < 0 { throw Errno(rawValue: errno) }
        defer { _ = Glue.close(fd) }
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return }
        let failure = errno
        guard failure == ENOTSUP || failure == EINVAL else { throw Errno(rawValue: failure) }
        #endif
        if fsync(fd) != 0 { throw Errno(rawValue: errno) }
    }

    public func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        let result = source.withPlatformString { from in
            destination.withPlatformString { to in Glue.rename(from, to) }
        }
        if result != 0 { throw Errno(rawValue: errno) }
    }

    public func removeFile(_ path: FilePath) throws(Errno) {
        if path.withPlatformString({ unlink($0) }) != 0 { throw Errno(rawValue: errno) }
    }

    public func createDirectory(_ path: FilePath) throws(Errno) {
        if path.withPlatformString({ mkdir($0, 0o700) }) != 0 { throw Errno(rawValue: errno) }
    }

    public func removeDirectory(_ path: FilePath) throws(Errno) {
        if path.withPlatformString({ rmdir($0) }) != 0 { throw Errno(rawValue: errno) }
    }

    public func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String] {
        guard let dir = path.withPlatformString({ opendir($0) }) else { throw Errno(rawValue: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw Errno(rawValue: errno) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String in
                let bytes = raw.bindMemory(to: UInt8.self)
                let length = bytes.firstIndex(of: 0) ?? bytes.count
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[..<length]), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func itemKind(at path: FilePath) throws(Errno) -> FileItemKind? {
        var info = stat()
        if path.withPlatformString({ stat($0, &info) }) != 0 {
            let failure = errno
            if failure == ENOENT || failure == ENOTDIR { return nil }
            throw Errno(rawValue: failure)
        }
        return (info.st_mode & S_IFMT) == S_IFDIR ? .directory : .file
    }

    /// A POSIX record lock (`fcntl(F_SETLK)`) on the whole file, plus a
    /// process-wide table for opens within this process.
    ///
    /// Why not `flock(2)`: an `flock` lock belongs to the open file
    /// description, which a child process shares from `fork` until its
    /// `exec` closes the descriptor — Foundation's `Process` closes
    /// descriptors one by one for tens of milliseconds — so a log closed
    /// while a child is being spawned stays locked. Record locks are owned by
    /// the process and never inherited by a child. They do not exclude the
    /// same process, hence the table, keyed by device and inode.
    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        var info = stat()
        if fstat(descriptor.rawValue, &info) != 0 { throw Errno(rawValue: errno) }
        let identity = ProcessLocks.Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        try ProcessLocks.claim(identity, for: descriptor)
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0
        let result = retryOnInterruptC { fcntl(descriptor.rawValue, F_SETLK, &lock) }
        if result != 0 {
            let failure = errno
            ProcessLocks.release(descriptor)
            throw failure == EACCES || failure == EAGAIN ? .wouldBlock : Errno(rawValue: failure)
        }
    }
}

/// The record locks this process holds, so a second open in the same
/// process is refused too.
private enum ProcessLocks {
    struct Identity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    static let held = Locked<[Identity: CInt]>([:])

    static func claim(_ identity: Identity, for descriptor: FileDescriptor) throws(Errno) {
        let claimed = held.withLock { held -> Bool in
            if held[identity] != nil { return false }
            held[identity] = descriptor.rawValue
            return true
        }
        if !claimed { throw .wouldBlock }
    }

    static func release(_ descriptor: FileDescriptor) {
        held.withLock { held in
            if let identity = held.first(where: { $0.value == descriptor.rawValue })?.key { held[identity] = nil }
        }
    }
}

private func retryOnInterruptC(_ body: () -> CInt) -> CInt {
    while true {
        let result = body()
        if result == 0 || errno != EINTR { return result }
    }
}

/// Retries a system call interrupted by a signal before it did anything.
private func retryOnInterrupt<T>(_ body: () throws(Errno) -> T) throws(Errno) -> T {
    while true {
        do { return try body() } catch where error == .interrupted { continue }
    }
}

/// Names the C functions whose Swift names clash with our own methods.
private enum Glue {
    static func close(_ fd: CInt) -> CInt {
        #if canImport(Darwin)
        return Darwin.close(fd)
        #elseif canImport(Glibc)
        return Glibc.close(fd)
        #else
        return Musl.close(fd)
        #endif
    }

    static func rename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> CInt {
        #if canImport(Darwin)
        return Darwin.rename(from, to)
        #elseif canImport(Glibc)
        return Glibc.rename(from, to)
        #else
        return Musl.rename(from, to)
        #endif
    }
}
