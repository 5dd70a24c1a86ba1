import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

// `String` and `URL` forms of the calls that take the outbox's root, so an
// app passes Application Support's URL (or a configured string) without
// importing SystemPackage for `FilePath`.

extension LogOutboxStore {
    /// Opens (creating if needed, with any missing parents) the queue of
    /// `partition` under the directory a `file:` URL names — Application
    /// Support, say; see ``open(root:partition:configuration:now:)-(FilePath,_,_,_)``.
    /// Any other URL throws ``/OutboxModel/OutboxError/Code/invalidArgument``.
    public static func open(
        root: URL, partition: String, configuration: OutboxStoreConfiguration = OutboxStoreConfiguration(),
        now: Date = Date()
    ) async throws(OutboxError) -> LogOutboxStore {
        try await open(root: try rootPath(root), partition: partition, configuration: configuration, now: now)
    }

    /// Opens (creating if needed, with any missing parents) the queue of
    /// `partition` under the directory at `root`; see
    /// ``open(root:partition:configuration:now:)-(FilePath,_,_,_)``.
    public static func open(
        root: String, partition: String, configuration: OutboxStoreConfiguration = OutboxStoreConfiguration(),
        now: Date = Date()
    ) async throws(OutboxError) -> LogOutboxStore {
        try await open(root: try rootPath(root), partition: partition, configuration: configuration, now: now)
    }

    /// Deletes `partition`'s queue under the directory a `file:` URL names;
    /// see `purge(root:partition:fileSystem:)` (the `FilePath` one).
    public static func purge(
        root: URL, partition: String, fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxError) {
        try await purge(root: try rootPath(root), partition: partition, fileSystem: fileSystem)
    }

    /// Deletes `partition`'s queue under the directory at `root`; see
    /// `purge(root:partition:fileSystem:)` (the `FilePath` one).
    public static func purge(
        root: String, partition: String, fileSystem: any FileSystem = PosixFileSystem()
    ) async throws(OutboxError) {
        try await purge(root: try rootPath(root), partition: partition, fileSystem: fileSystem)
    }

    /// Deletes `partition`'s queue under the directory a `file:` URL names,
    /// with `configuration`'s key: how an app that encrypts its queues
    /// purges one; see ``purge(root:partition:encryptionKey:fileSystem:)``.
    public static func purge(
        root: URL, partition: String, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) {
        try await purge(root: try rootPath(root), partition: partition, configuration: configuration)
    }

    /// Deletes `partition`'s queue under the directory at `root`, with
    /// `configuration`'s key; see ``purge(root:partition:encryptionKey:fileSystem:)``.
    public static func purge(
        root: String, partition: String, configuration: OutboxStoreConfiguration
    ) async throws(OutboxError) {
        try await purge(root: try rootPath(root), partition: partition, configuration: configuration)
    }

    /// The partitions under the directory a `file:` URL names that
    /// `configuration`'s key (or its absence) can name: with a key, the
    /// queues sealed under it. Any other URL throws ``/OutboxModel/OutboxError/Code/invalidArgument``.
    public static func partitions(root: URL, configuration: OutboxStoreConfiguration) throws(OutboxError) -> [String] {
        partitions(root: try rootPath(root), configuration: configuration)
    }

    /// The partitions (users) that have a queue under the directory a
    /// `file:` URL names. Any other URL throws ``/OutboxModel/OutboxError/Code/invalidArgument``.
    public static func partitions(root: URL, fileSystem: any FileSystem = PosixFileSystem()) throws(OutboxError)
        -> [String]
    {
        partitions(root: try rootPath(root), fileSystem: fileSystem)
    }

    /// The partitions (users) that have a queue under the directory at `root`.
    public static func partitions(root: String, fileSystem: any FileSystem = PosixFileSystem()) -> [String] {
        root.isEmpty ? [] : partitions(root: FilePath(root), fileSystem: fileSystem)
    }

    private static func rootPath(_ url: URL) throws(OutboxError) -> FilePath {
        do { return try url.filePath() } catch { throw OutboxError(.invalidArgument, error.message) }
    }

    private static func rootPath(_ path: String) throws(OutboxError) -> FilePath {
        do { return try FilePath(checking: path) } catch { throw OutboxError(.invalidArgument, "the outbox root path is empty") }
    }
}
