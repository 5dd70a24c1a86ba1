import SystemPackage

/// The first step of an open: the log directory exists (created, with any
/// missing parents, if the configuration allows) and is locked. An open that
/// created directories and then fails removes them again, so a failed
/// create leaves nothing behind.
struct LogDirectoryOpening {
    let layout: DirectoryLayout
    let fileSystem: any FileSystem
    let createIfMissing: Bool

    var directory: FilePath { layout.directory }

    /// The lock, and the directories this open created (outermost first).
    func lock() throws(OutboxLogError) -> (lock: DirectoryLock, created: [FilePath]) {
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
            // theirs now. Any other failure: remove what is still empty.
            if error.code != .locked { fileSystem.removeCreatedDirectories(created) }
            throw error
        }
    }

    /// Undoes the creation of the directory after a later step of the open
    /// failed, while holding its lock; then releases the lock.
    func abandon(_ lock: DirectoryLock, created: [FilePath]) {
        if !created.isEmpty {
            // Nothing but the lock file can be in a directory this open
            // created (recovery of an empty log writes nothing).
            try? fileSystem.removeFile(layout.lockFile)
            fileSystem.removeCreatedDirectories(created)
        }
        lock.release()
    }

    private func createIfNeeded() throws(OutboxLogError) -> [FilePath] {
        let kind: FileItemKind?
        do { kind = try fileSystem.itemKind(at: directory) } catch {
            throw .io("cannot inspect the log directory", error, file: directory)
        }
        switch kind {
        case .directory:
            return []
        case .file:
            throw OutboxLogError(.invalidArgument, "not a directory", file: directory)
        case nil:
            guard createIfMissing else {
                throw OutboxLogError(.notFound, "the log directory does not exist", file: directory)
            }
            // Created concurrently is fine: the lock decides who owns it.
            return try fileSystem.createDirectoryWithParents(directory)
        }
    }
}
