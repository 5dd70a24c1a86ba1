import SystemPackage

/// The exclusive lock on a log directory's `LOCK` file, held by the one open
/// ``OutboxLog`` of the directory, or by ``OutboxLog/destroy(at:fileSystem:)``
/// while it deletes the directory.
///
/// Taking it goes through ``FileSystem/openAndLock(_:)``: a refused attempt
/// never closes a descriptor in a way that releases the holder's lock (POSIX
/// record locks belong to the process, and closing any descriptor of the file
/// would drop them; see ``PosixFileSystem/close(_:)``).
struct DirectoryLock {
    let file: FilePath
    let descriptor: FileDescriptor
    let fileSystem: any FileSystem

    /// Locks `layout`'s directory; `.locked` with `refusal` as the message if
    /// it is held, in this process or another.
    static func acquire(
        _ layout: DirectoryLayout, fileSystem: any FileSystem, refusal: String
    ) throws(OutboxLogError) -> DirectoryLock {
        do {
            let descriptor = try fileSystem.openAndLock(layout.lockFile)
            return DirectoryLock(file: layout.lockFile, descriptor: descriptor, fileSystem: fileSystem)
        } catch where error == .wouldBlock || error == .resourceTemporarilyUnavailable {
            throw OutboxLogError(.locked, refusal, file: layout.directory, errno: error)
        } catch {
            throw .io("cannot lock the log directory", error, file: layout.lockFile)
        }
    }

    /// Releases the lock (closes the descriptor holding it).
    func release() {
        // A failed close has released the descriptor all the same.
        try? fileSystem.close(descriptor)
    }
}
