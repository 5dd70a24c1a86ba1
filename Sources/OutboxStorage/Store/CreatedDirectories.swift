import OutboxLog
import SystemPackage

/// The directories an open is about to create, noted before it starts, so
/// that an open that fails leaves nothing behind: what it created, and only
/// that, is removed again (if still empty), deepest first.
struct CreatedDirectories {
    private let fileSystem: any FileSystem
    /// The paths that did not exist before, outermost first.
    let missing: [FilePath]

    /// `paths`, outermost first (each inside the one before).
    init(_ paths: [FilePath], fileSystem: any FileSystem) {
        self.fileSystem = fileSystem
        missing = paths.filter { path in
            do { return try fileSystem.itemKind(at: path) == nil } catch { return false }
        }
    }

    /// Whether `path` did not exist before the open.
    func isNew(_ path: FilePath) -> Bool { missing.contains(path) }

    /// Removes the created directories that are empty, innermost first.
    func removeIfEmpty() {
        for path in missing.reversed() {
            guard let contents = try? fileSystem.contentsOfDirectory(path), contents.isEmpty else { continue }
            try? fileSystem.removeDirectory(path)
        }
    }
}
