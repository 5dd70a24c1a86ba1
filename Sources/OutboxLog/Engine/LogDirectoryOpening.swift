import SystemPackage

/// The first step of an open: the log directory exists (created if the
/// configuration allows) and is locked. An open that created the directory
/// and then fails removes it again, so a failed create leaves nothing
/// behind.
struct LogDirectoryOpening {
    let layout: DirectoryLayout
    let fileSystem: any FileSystem
    let createIfMissing: Bool

    var directory: FilePath { layout.directory }

    /// The lock, and whether this open created the directory.
    func lock() throws(OutboxLogError) -> (lock: DirectoryLock, created: Bool) {
        guard !directory.isEmpty else {
            throw OutboxLogError(.invalidArgument, "the log directory path is empty")
        }
        let created = try createIfNeeded()
        do {
            let lock = try DirectoryLock.acquire(
                layout, fileSystem: fileSystem, refusal: "the log is open in another OutboxLog, in this process or another")
            return (lock, created)
        } catch {
            // Locked: another open took the directory just created; it is
            // theirs now. Any other failure: remove it if it is still empty.
            if created && error.code != .locked { removeCreatedDirectory() }
            throw error
        }
    }

    /// Undoes the creation of the directory after a later step of the open
    /// failed, while holding its lock; then releases the lock.
    func abandon(_ lock: DirectoryLock, created: Bool) {
        if created {
            // Nothing but the lock file can be in a directory this open
            // created (recovery of an empty log writes nothing).
            try? fileSystem.removeFile(layout.lockFile)
            removeCreatedDirectory()
        }
        lock.release()
    }

    private func createIfNeeded() throws(OutboxLogError) -> Bool {
        let kind: FileItemKind?
        do { kind = try fileSystem.itemKind(at: directory) } catch {
            throw .io("cannot inspect the log directory", error, file: directory)
        }
        switch kind {
        case .directory:
            return false
        case .file:
            throw OutboxLogError(.invalidArgument, "not a directory", file: directory)
        case nil:
            guard createIfMissing else {
                throw OutboxLogError(.notFound, "the log directory does not exist", file: directory)
            }
            do {
                try fileSystem.createDirectory(directory)
            } catch where error == .fileExists {
                return false  // created concurrently: the lock decides who owns it
            } catch where error == .noSuchFileOrDirectory {
                throw OutboxLogError(.notFound, "the log directory's parent does not exist", file: directory, errno: error)
            } catch {
                throw .io("cannot create the log directory", error, file: directory)
            }
            do {
                try fileSystem.synchronizeDirectory(layout.parentDirectory)
            } catch {
                removeCreatedDirectory()
                throw .io("cannot sync the new log directory's parent", error, file: layout.parentDirectory)
            }
            return true
        }
    }

    /// Best effort: the directory goes only if it is empty, and its parent is
    /// synced so the removal is as durable as the creation was meant to be.
    private func removeCreatedDirectory() {
        guard (try? fileSystem.removeDirectory(directory)) != nil else { return }
        try? fileSystem.synchronizeDirectory(layout.parentDirectory)
    }
}
