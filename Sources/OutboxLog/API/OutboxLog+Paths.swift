import Foundation
import SystemPackage

// `String` and `URL` forms of the calls that take a directory, so an app
// names a path with the types it already has (a `FileManager` URL, a
// configured string) without importing SystemPackage for `FilePath`.

extension OutboxLog {
    /// Opens the log in the directory at `path`; see ``open(at:configuration:)-(FilePath,_)``.
    public static func open(
        at path: String, configuration: Configuration = Configuration()
    ) async throws(OutboxLogError) -> OutboxLog {
        try await open(at: try FilePath(checking: path), configuration: configuration)
    }

    /// Opens the log in the directory a `file:` URL names; see
    /// ``open(at:configuration:)-(FilePath,_)``. Any other URL throws
    /// ``OutboxLogError/Code/invalidArgument``.
    public static func open(
        at url: URL, configuration: Configuration = Configuration()
    ) async throws(OutboxLogError) -> OutboxLog {
        try await open(at: try url.filePath(), configuration: configuration)
    }

    /// Deletes the log in the directory at `path`; see ``destroy(at:fileSystem:)-(FilePath,_)``.
    public static func destroy(
        at path: String, fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxLogError) {
        try await destroy(at: try FilePath(checking: path), fileSystem: fileSystem)
    }

    /// Deletes the log in the directory a `file:` URL names; see
    /// ``destroy(at:fileSystem:)-(FilePath,_)``.
    public static func destroy(
        at url: URL, fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxLogError) {
        try await destroy(at: try url.filePath(), fileSystem: fileSystem)
    }
}

extension FilePath {
    /// `path` as a `FilePath`; an empty string names no directory.
    package init(checking path: String) throws(OutboxLogError) {
        guard !path.isEmpty else { throw OutboxLogError(.invalidArgument, "the directory path is empty") }
        self.init(path)
    }
}

extension URL {
    /// The path of this `file:` URL, for the calls that take a `FilePath`.
    ///
    /// - Throws: ``OutboxLogError/Code/invalidArgument`` for any other
    ///   scheme (`https:`, say), which names no directory.
    package func filePath() throws(OutboxLogError) -> FilePath {
        guard isFileURL else {
            throw OutboxLogError(.invalidArgument, "not a file URL, so it names no directory: \(absoluteString)")
        }
        let path = withUnsafeFileSystemRepresentation { $0.map { FilePath(platformString: $0) } }
        guard let path, !path.isEmpty else {
            throw OutboxLogError(.invalidArgument, "the file URL has no path: \(absoluteString)")
        }
        return path
    }
}
