import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxLog
import OutboxQueue
import SystemPackage

/// What the stores' own decoders read in a store vector's files: a key
/// queue if they hold `elements/`, a key store if they hold `keys.secret`,
/// else a plain outbox queue.
enum StoreVectorReading {
    static func expected(_ files: VectorFiles) async throws -> [String: Any] {
        // A scratch copy: opening the log, even read-only, creates `LOCK`.
        let scratch = try VectorLogs.Scratch()
        defer { scratch.remove() }
        try VectorLogs.store(files, in: scratch.path)
        let configuration = VectorLogs.configuration()
        if files.keys.contains(where: { $0.hasPrefix("elements/") }) {
            return try await DurableQueueDescription.directory(FilePath(scratch.path), configuration: configuration)
        }
        if files["keys.secret"] != nil {
            return try await KeyStoreRecordDescription.directory(FilePath(scratch.path), configuration: configuration)
        }
        return try await StoreRecordDescription.directory(FilePath(scratch.path), configuration: configuration)
    }
}
