import SystemPackage

/// Deletes a log directory while holding its lock, so an open log is never
/// deleted from under itself.
struct LogDirectoryRemoval {
    let directory: FilePath
    let fileSystem: any FileSystem

    func run() throws(OutboxLogError) {
        let kind: FileItemKind?
        do { kind = try fileSystem.itemKind(at: directory) } catch {
            throw .io("cannot inspect the log directory", error, file: directory)
        }
        guard kind == .directory else {
            if kind == nil { return }
            throw OutboxLogError(.invalidArgument, "not a directory", file: directory)
        }
        let layout = DirectoryLayout(directory: directory)
        let lock = try DirectoryLock.acquire(
            layout, fileSystem: fileSystem, refusal: "the log is open; close it before deleting it")
        defer { lock.release() }
        do {
            try removeContents(of: directory, keeping: DirectoryLayout.lockName)
            try fileSystem.removeFile(layout.lockFile)
            try fileSystem.removeDirectory(directory)
            try fileSystem.synchronizeDirectory(directory.containingDirectory)
        } catch {
            throw .io("cannot delete the log directory", error, file: directory)
        }
    }

    private func removeContents(of folder: FilePath, keeping kept: String? = nil) throws(Errno) {
        for name in try fileSystem.contentsOfDirectory(folder) where name != kept {
            let path = folder.appending(name)
            if try fileSystem.itemKind(at: path) == .directory {
                try removeContents(of: path)
                try fileSystem.removeDirectory(path)
            } else {
                try fileSystem.removeFile(path)
            }
        }
    }
}
