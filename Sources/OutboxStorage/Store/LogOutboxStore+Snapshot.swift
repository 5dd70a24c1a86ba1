import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

// The queue's snapshot (``OutboxQueueSnapshot``): a file beside the log,
// `SNAPSHOT`, that the draining process rewrites and any process reads
// without the queue's lock. One byte says how the rest is stored: 0, the
// snapshot's JSON; 1, that JSON sealed under the queue's key (AES-GCM,
// bound to the partition and the file's name), so that with encryption on
// the scopes, types and server ids its explanations name are not readable
// on disk. It is advice, not a record: written without a sync, a crash may
// leave it old or missing, and the log never reads it.
extension LogOutboxStore {
    /// The snapshot's file name in the queue's directory.
    public static let snapshotFileName = "SNAPSHOT"

    private static let plainSnapshot: UInt8 = 0
    private static let sealedSnapshot: UInt8 = 1

    /// Writes `snapshot` to the queue's `SNAPSHOT` file (0600), sealed when
    /// the queue is encrypted, replacing the one before. Not synced.
    public func publishSnapshot(_ snapshot: OutboxQueueSnapshot) async throws(OutboxError) {
        let format = RecordFormat(partition: core.partition, key: core.configuration.encryptionKey)
        let json = snapshot.encoded()
        let bytes: [UInt8]
        if let sealer = format.sealer {
            bytes = [Self.sealedSnapshot]
                + (try sealer.seal(json, .snapshot, partition: core.partition, binding: Array(Self.snapshotFileName.utf8)))
        } else {
            bytes = [Self.plainSnapshot] + json
        }
        let path = directory.appending(Self.snapshotFileName)
        let fileSystem = core.configuration.log.fileSystem
        try await offThePool { () throws(OutboxError) in
            try SmallFile.write(bytes, to: path, fileSystem: fileSystem, replacing: true, synced: false)
        }
    }

    /// The last snapshot written for `partition`'s queue under `root`, read
    /// without opening the queue (another process may hold it); `nil` when
    /// there is no such queue or it has no snapshot.
    ///
    /// - Throws: ``/OutboxModel/OutboxError`` — `.keyRequired` for a sealed
    ///   snapshot without a key in `configuration`, `.wrongKey` when it does
    ///   not open with that key, `.corruptEntry` for a file that is not a
    ///   snapshot, `.storage` when it cannot be read.
    public static func snapshot(
        root: FilePath, partition: String, configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()
    ) async throws(OutboxError) -> OutboxQueueSnapshot? {
        var configuration = configuration
        configuration.log.createIfMissing = false
        let directory = try await queueDirectory(root: root, partition: partition, configuration: configuration)
        let fileSystem = configuration.log.fileSystem
        let path = directory.appending(snapshotFileName)
        let limit = OutboxQueueSnapshot.maximumEncodedSize + 1 + RecordSealer.overhead
        guard
            let bytes = try await offThePool({ () throws(OutboxError) in
                try SmallFile.read(path, fileSystem: fileSystem, limit: limit)
            })
        else { return nil }
        let format = RecordFormat(partition: partition, key: configuration.encryptionKey)
        switch (bytes.first, format.sealer) {
        case (plainSnapshot, nil):
            return try OutboxQueueSnapshot(decoding: bytes.dropFirst())
        case (plainSnapshot, _?):
            // An encrypted queue's process seals its snapshot: a plain one was put there by someone else.
            throw OutboxError(.corruptEntry, "\(path): a plain snapshot beside an encrypted queue")
        case (sealedSnapshot, let sealer?):
            let json = try sealer.open(bytes.dropFirst(), .snapshot, partition: partition, binding: Array(snapshotFileName.utf8))
            return try OutboxQueueSnapshot(decoding: json)
        case (sealedSnapshot, nil):
            throw OutboxError(.keyRequired, "\(path): the snapshot is sealed; give the queue's key")
        default:
            throw OutboxError(.corruptEntry, "\(path): not a queue snapshot (it begins with neither 0 nor 1)")
        }
    }
}
