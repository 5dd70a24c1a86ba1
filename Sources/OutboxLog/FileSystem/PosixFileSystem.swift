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

    /// Closes `descriptor` — unless this process holds a record lock on its
    /// file through *another* descriptor: POSIX drops every lock a process
    /// holds on a file when it closes any descriptor of that file, so such a
    /// descriptor is parked instead, and closed together with the lock
    /// holder's. (A refused second open of a log must never unlock the first.)
    public func close(_ descriptor: FileDescriptor) throws(Errno) {
        try ProcessLocks.close(descriptor)
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
    /// same process, hence the table, keyed by device and inode; and closing
    /// any descriptor of the file drops them, hence ``close(_:)`` parks
    /// descriptors of a file this process holds locked.
    public func lockExclusively(_ descriptor: FileDescriptor) throws(Errno) {
        try ProcessLocks.lock(descriptor, identity: try ProcessLocks.identity(of: descriptor))
    }

    /// Refuses a lock file this process already holds *before* opening it
    /// (by the device and inode its path names), so a refused attempt opens
    /// nothing; otherwise opens and locks it as the protocol's default does.
    public func openAndLock(_ path: FilePath) throws(Errno) -> FileDescriptor {
        if let identity = ProcessLocks.identity(atPath: path), ProcessLocks.isHeld(identity) { throw .wouldBlock }
        let descriptor = try openFile(path, mode: .createOrOpen)
        do {
            try lockExclusively(descriptor)
        } catch {
            try? close(descriptor)  // parked if the file turned out to be ours after all
            throw error
        }
        return descriptor
    }
}

/// The record locks this process holds, so a second open in the same
/// process is refused too, and the descriptors that must stay open until
/// those locks are released.
///
/// Every change happens under the table's mutex, the `fcntl` and `close`
/// calls included: a lock taken by one thread can then never be dropped by
/// another thread's close of a parked descriptor.
private enum ProcessLocks {
    struct Identity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    struct Table {
        /// The descriptor each locked file was locked through.
        var holders: [Identity: CInt] = [:]
        /// Other descriptors of locked files, closed when the lock is released.
        var parked: [Identity: [CInt]] = [:]
    }

    static let table = Locked(Table())

    static func identity(of descriptor: FileDescriptor) throws(Errno) -> Identity {
        var info = stat()
        if fstat(descriptor.rawValue, &info) != 0 { throw Errno(rawValue: errno) }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func identity(atPath path: FilePath) -> Identity? {
        var info = stat()
        guard path.withPlatformString({ stat($0, &info) }) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func isHeld(_ identity: Identity) -> Bool {
        table.withLock { $0.holders[identity] != nil }
    }

    static func lock(_ descriptor: FileDescriptor, identity: Identity) throws(Errno) {
        try table.withLock { table throws(Errno) in
            if let holder = table.holders[identity] {
                if holder == descriptor.rawValue { return }  // locking again through the holder
                throw .wouldBlock
            }
            var lock = flock()
            lock.l_type = Int16(F_WRLCK)
            lock.l_whence = Int16(SEEK_SET)
            lock.l_start = 0
            lock.l_len = 0
            if retryOnInterruptC({ fcntl(descriptor.rawValue, F_SETLK, &lock) }) != 0 {
                let failure = errno
                throw failure == EACCES || failure == EAGAIN ? .wouldBlock : Errno(rawValue: failure)
            }
            table.holders[identity] = descriptor.rawValue
        }
    }

    static func close(_ descriptor: FileDescriptor) throws(Errno) {
        // A descriptor fstat cannot describe is closed as it is (and close(2)
        // reports what is wrong with it).
        let identity = try? identity(of: descriptor)
        let failure = table.withLock { table -> CInt? in
            func closeNow(_ fd: CInt) -> CInt? { Glue.close(fd) == 0 ? nil : errno }
            guard let identity, let holder = table.holders[identity] else { return closeNow(descriptor.rawValue) }
            guard holder == descriptor.rawValue else {
                table.parked[identity, default: []].append(descriptor.rawValue)
                return nil
            }
            table.holders[identity] = nil
            for parked in table.parked.removeValue(forKey: identity) ?? [] { _ = Glue.close(parked) }
            return closeNow(descriptor.rawValue)
        }
        // close(2) must not be retried on EINTR: the descriptor is gone.
        if let failure { throw Errno(rawValue: failure) }
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
