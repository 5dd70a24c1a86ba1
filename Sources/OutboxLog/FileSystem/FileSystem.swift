import SystemPackage

/// How ``FileSystem/openFile(_:mode:)`` opens a file.
public enum FileOpenMode: Sendable, Hashable {
    /// Open an existing file for reading only.
    case readOnly
    /// Open an existing file for reading and writing.
    case readWrite
    /// Create the file if it does not exist (mode 0600), then open it for
    /// reading and writing. An existing file keeps its contents.
    case createOrOpen
    /// Create a new, empty file (mode 0600) and open it for reading and
    /// writing; fails with `EEXIST` if the name is taken.
    case createNew
}

/// Every system call the engine makes on files and directories.
///
/// The engine never calls the operating system directly: it goes through a
/// `FileSystem`, so tests and the `outbox torture` driver can substitute one
/// that injects `EIO`/`ENOSPC`, tears writes, or simulates a power loss
/// (see `SimulatedFileSystem` in the `OutboxLogTesting` module). The
/// production implementation is ``PosixFileSystem``.
///
/// Implementations must be safe to call from several threads at once. Each
/// method reports failure by throwing the `errno` of the failed call and has
/// no other side effect on failure than the one the system call itself would
/// have (a failed `write` may have written a prefix, as on a real disk).
///
/// The durability contract the engine relies on is POSIX's:
/// - bytes passed to ``write(_:_:at:)`` survive a crash of the *process*
///   once the call returns, but only survive a crash of the *machine* after a
///   successful ``synchronize(_:)`` of that file;
/// - a new directory entry (create, rename, remove) survives a machine crash
///   only after ``synchronizeDirectory(_:)`` of its directory;
/// - after a failed ``synchronize(_:)`` the unsynced bytes may be lost even
///   though later reads still return them (Linux marks the pages clean), so
///   the engine never retries a failed sync.
public protocol FileSystem: Sendable {
    /// Opens (and, depending on `mode`, creates) a regular file.
    func openFile(_ path: FilePath, mode: FileOpenMode) throws(Errno) -> FileDescriptor

    /// Closes a descriptor returned by ``openFile(_:mode:)``.
    func close(_ descriptor: FileDescriptor) throws(Errno)

    /// Reads up to `buffer.count` bytes at `offset`; returns the number of
    /// bytes read, which is smaller only at the end of the file.
    func read(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int

    /// Writes `bytes` at `offset` (a positional write); returns the number
    /// of bytes written, which may be smaller than `bytes.count`.
    func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int

    /// The current size of the file in bytes.
    func size(of descriptor: FileDescriptor) throws(Errno) -> Int64

    /// Sets the file's size, discarding bytes past `size`.
    func truncate(_ descriptor: FileDescriptor, to size: Int64) throws(Errno)

    /// Flushes the file's data (and the metadata needed to read it back) to
    /// stable storage: `fdatasync(2)` on Linux, `fcntl(F_FULLFSYNC)` on Apple
    /// platforms, which also flushes the drive's write cache.
    func synchronize(_ descriptor: FileDescriptor) throws(Errno)

    /// Makes the directory's entries (files created, renamed or removed in
    /// it) durable: `fsync(2)` on the directory.
    func synchronizeDirectory(_ path: FilePath) throws(Errno)

    /// Atomically renames `source` to `destination`, replacing it if it exists.
    func rename(_ source: FilePath, to destination: FilePath) throws(Errno)

    /// Removes a file.
    func removeFile(_ path: FilePath) throws(Errno)

    /// Creates a directory with mode 0700. Throws `EEXIST` if it exists.
    func createDirectory(_ path: FilePath) throws(Errno)

    /// Removes an empty directory.
    func removeDirectory(_ path: FilePath) throws(Errno)

    /// The names of the entries in a directory, without `.` and `..`.
    func contentsOfDirectory(_ path: FilePath) throws(Errno) -> [String]

    /// Whether something exists at `path`, and if so whether it is a directory.
    func itemKind(at path: FilePath) throws(Errno) -> FileItemKind?

    /// Takes an exclusive, non-blocking advisory lock on an open file:
    /// throws `EWOULDBLOCK` if it is held, by this process or another. The
    /// lock is released when *this* descriptor is closed (or the process
    /// dies) — closing another descriptor of the same file must not release
    /// it — and is never inherited by child processes.
    func lockExclusively(_ descriptor: FileDescriptor) throws(Errno)

    /// Opens the lock file at `path` (creating it, mode 0600) and locks it
    /// with ``lockExclusively(_:)``; returns the descriptor holding the lock.
    /// If the lock is held, by this process or another, throws `EWOULDBLOCK`
    /// and leaves every lock as it was. The default opens, locks, and closes
    /// the descriptor again on failure; ``PosixFileSystem`` first refuses a
    /// file this process already holds, without opening it.
    func openAndLock(_ path: FilePath) throws(Errno) -> FileDescriptor

    /// A hint that the file's bytes `[offset, offset + length)` will be read
    /// soon, so the system may start reading them in the background
    /// (`posix_fadvise(POSIX_FADV_WILLNEED)` on Linux). Recovery gives it for
    /// the next segment while it checksums the current one. Never fails:
    /// a hint that cannot be given changes nothing but speed.
    func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64)
}

extension FileSystem {
    /// No read-ahead: file systems that simulate or wrap others ignore the hint.
    public func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64) {}

    /// Opens with ``openFile(_:mode:)`` and locks with ``lockExclusively(_:)``.
    public func openAndLock(_ path: FilePath) throws(Errno) -> FileDescriptor {
        let descriptor = try openFile(path, mode: .createOrOpen)
        do {
            try lockExclusively(descriptor)
        } catch {
            try? close(descriptor)
            throw error
        }
        return descriptor
    }
}

/// What ``FileSystem/itemKind(at:)`` found.
public enum FileItemKind: Sendable, Hashable {
    case file
    case directory
}

extension FileSystem {
    /// Reads exactly `buffer.count` bytes unless the file ends first;
    /// returns the number of bytes read.
    package func readFully(
        _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            let n = try read(descriptor, into: slice, at: offset + Int64(done))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `bytes` at `offset`, looping over short writes.
    package func writeFully(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = try write(descriptor, slice, at: offset + Int64(done))
            if n <= 0 { throw Errno.ioError }
            done += n
        }
    }

    /// Writes all of `bytes` at `offset`.
    package func writeFully(_ descriptor: FileDescriptor, _ bytes: [UInt8], at offset: Int64) throws(Errno) {
        let result = bytes.withUnsafeBytes { raw -> Result<Void, Errno> in
            do throws(Errno) {
                try writeFully(descriptor, raw, at: offset)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    package func readBytes(_ descriptor: FileDescriptor, count: Int, at offset: Int64) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { raw -> Result<Int, Errno> in
            do throws(Errno) { return .success(try readFully(descriptor, into: raw, at: offset)) } catch {
                return .failure(error)
            }
        }
        let got = try result.get()
        if got < count { bytes.removeLast(count - got) }
        return bytes
    }
}
