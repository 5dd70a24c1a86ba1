import Crypto
import OutboxLog
import SystemPackage
import OutboxModel

/// A directory of spools a queue moves in, and the format their records
/// are in (``RecordFormat``).
///
/// A queue's own spools are in its format. A queue that was sealed (a key
/// given to a plain queue) also takes the spools written under its plain
/// name — by a writer that found the plain queue held while it was being
/// sealed, or before the key was first given: their records are plain, and
/// they are sealed on their way in, so nothing plain stays behind. A
/// re-key moves the spools written under the old key's name the same way
/// (it alone has both keys).
struct SpoolSource: Sendable {
    /// `<root>/spools/outbox+<32 hex>`.
    let directory: FilePath
    /// The records' format: the queue's, or the one the queue was in.
    let format: RecordFormat
    /// The key the spools' key check must open with (`nil`: plain).
    let key: SymmetricKey?
    /// Whether the records are in the queue's own format (else each entry
    /// is re-encoded, and sealed, in the queue's on its way in).
    let inQueueFormat: Bool

    /// The queue's own spools.
    static func own(queue: FilePath, format: RecordFormat, key: SymmetricKey?) -> SpoolSource {
        SpoolSource(directory: SpoolLayout.directory(ofQueue: queue), format: format, key: key, inQueueFormat: true)
    }

    /// For a sealed queue: the spools under the name its plain queue has
    /// under `root` (named by the root's salt), if the root has a salt and
    /// no plain queue of that name lives (a live plain queue takes its own
    /// spools). Blocking.
    static func plainPredecessor(
        ofSealedQueue queue: FilePath, partition: String, fileSystem: any FileSystem
    ) -> SpoolSource? {
        let root = queue.removingLastComponent().removingLastComponent()
        guard
            let naming = try? PartitionDirectory.naming(root: root, key: nil, fileSystem: fileSystem, create: false)
        else { return nil }
        let name = PartitionDirectory.name(partition, naming: naming)
        guard name != queue.lastComponent?.string,
            (try? fileSystem.itemKind(at: PartitionDirectory.path(root: root, name: name))) == nil
        else { return nil }
        return SpoolSource(
            directory: SpoolLayout.directory(root: root, queueName: name), format: RecordFormat(partition: partition, key: nil),
            key: nil, inQueueFormat: false)
    }
}
