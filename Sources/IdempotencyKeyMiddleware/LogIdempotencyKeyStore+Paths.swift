import Foundation
import OutboxLog
import SystemPackage

// `String` and `URL` forms of `open(at:)`, so a server names its key
// directory without importing SystemPackage for `FilePath`.

extension LogIdempotencyKeyStore {
    /// Opens (creating if needed, with any missing parents) the store in the
    /// directory at `path`; see ``open(at:configuration:now:)-(FilePath,_,_)``.
    /// An empty path throws ``IdempotencyKeyStoreError`` with the code
    /// `.invalidArgument`.
    public static func open(
        at path: String, configuration: Configuration = Configuration(), now: Date = Date()
    ) async throws -> LogIdempotencyKeyStore {
        try await open(at: try checked { () throws(OutboxLogError) in try FilePath(checking: path) }, configuration: configuration, now: now)
    }

    /// Opens (creating if needed, with any missing parents) the store in the
    /// directory a `file:` URL names; see ``open(at:configuration:now:)-(FilePath,_,_)``.
    /// Any other URL throws ``IdempotencyKeyStoreError`` with the code
    /// `.invalidArgument`.
    public static func open(
        at url: URL, configuration: Configuration = Configuration(), now: Date = Date()
    ) async throws -> LogIdempotencyKeyStore {
        try await open(at: try checked { () throws(OutboxLogError) in try url.filePath() }, configuration: configuration, now: now)
    }

    private static func checked(_ path: () throws(OutboxLogError) -> FilePath) throws(IdempotencyKeyStoreError) -> FilePath {
        do { return try path() } catch { throw IdempotencyKeyStoreError(.invalidArgument, error.message) }
    }
}
