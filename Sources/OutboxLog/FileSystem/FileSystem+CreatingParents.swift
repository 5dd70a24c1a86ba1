import SystemPackage

extension FilePath {
    /// The directory holding this path's last component: `"."` for a
    /// relative path of one component, where `removingLastComponent()` gives
    /// an empty path that no system call accepts.
    package var containingDirectory: FilePath {
        let parent = removingLastComponent()
        return parent.isEmpty ? "." : parent
    }
}

extension FileSystem {
    /// Creates `directory` and every missing directory above it, as
    /// `mkdir -p` does: a first launch must not fail because Application
    /// Support, `~/.local/share` or `/var/lib/<app>` does not exist yet.
    ///
    /// Each directory it creates gets mode 0700 (``createDirectory(_:)``);
    /// directories that exist are left as they are. After each creation the
    /// directory holding it is synced, so the new path survives a power loss
    /// before anything is written under it. A directory created concurrently
    /// by someone else is accepted.
    ///
    /// - Returns: the directories it created, outermost first.
    /// - Throws: ``OutboxLogError`` naming the directory that could not be
    ///   created (or the file in the way) and what to do about it; the
    ///   directories it created before the failure are removed again.
    @discardableResult
    package func createDirectoryWithParents(_ directory: FilePath) throws(OutboxLogError) -> [FilePath] {
        guard !directory.isEmpty else { throw OutboxLogError(.invalidArgument, "the directory path is empty") }
        var missing: [FilePath] = []
        var candidate = directory
        while !candidate.isEmpty {
            let kind: FileItemKind?
            do { kind = try itemKind(at: candidate) } catch {
                throw DirectoryCreationFailure.error(creating: candidate, errno: error, target: directory)
            }
            if kind == .directory { break }
            if kind == .file {
                throw DirectoryCreationFailure.error(creating: candidate, errno: .notDirectory, target: directory)
            }
            missing.append(candidate)
            let parent = candidate.removingLastComponent()
            if parent == candidate { break }  // the root itself is missing: mkdir says why
            candidate = parent
        }
        var created: [FilePath] = []
        for path in missing.reversed() {
            do {
                try createDirectory(path)
                created.append(path)
                try synchronizeDirectory(path.containingDirectory)
            } catch where error == .fileExists {
                // Created concurrently: fine if it is a directory.
                if (try? itemKind(at: path)) != .directory {
                    removeCreatedDirectories(created)
                    throw DirectoryCreationFailure.error(creating: path, errno: .notDirectory, target: directory)
                }
            } catch {
                removeCreatedDirectories(created)
                throw DirectoryCreationFailure.error(creating: path, errno: error, target: directory)
            }
        }
        return created
    }

    /// Best effort, innermost first: removes directories this process
    /// created (given outermost first) if they are still empty, syncing the
    /// directory that held each, so a failed creation leaves nothing behind.
    package func removeCreatedDirectories(_ created: [FilePath]) {
        for path in created.reversed() {
            guard (try? removeDirectory(path)) != nil else { return }
            try? synchronizeDirectory(path.containingDirectory)
        }
    }
}

/// The message of a failed ``FileSystem/createDirectoryWithParents(_:)``:
/// which directory, why, and what the user can do.
enum DirectoryCreationFailure {
    static func error(creating path: FilePath, errno: Errno, target: FilePath) -> OutboxLogError {
        let what = path == target ? "cannot create the directory" : "cannot create this directory, needed for \(target)"
        if errno == .notDirectory {
            return OutboxLogError(
                .io, "\(what): a file is in the way; move it, or choose another location", file: path, errno: errno)
        }
        return OutboxLogError(.io, "\(what): \(remedy(for: errno))", file: path, errno: errno)
    }

    private static func remedy(for errno: Errno) -> String {
        switch errno {
        case .permissionDenied, .notPermitted:
            "this process may not write there; create it with the app's user as owner, or choose a location the app may "
                + "write to (Application Support on Apple platforms, $XDG_DATA_HOME or a directory the service owns on Linux)"
        case .readOnlyFileSystem:
            "the file system is read-only; choose a writable location"
        case .noSpace:
            "the disk is full; free space and try again"
        default:
            "create it yourself, or choose another location"
        }
    }
}
