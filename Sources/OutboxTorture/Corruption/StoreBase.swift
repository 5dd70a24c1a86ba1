import Foundation
import Logging
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// A real outbox root — one queue (plain, or sealed with `--encrypted`),
/// its spools, its payload files — made by a workload and kept in memory,
/// so that each store case of the corrupt mode (``StoreCorruption``)
/// damages an identical copy; with what the workload was told, to check
/// what the damaged copy's owner hands back.
///
/// Two sessions: the first enqueues, delivers some entries and fails some,
/// and closes (its checkpoint, `SCHEDULE`, is kept as "an older copy");
/// the second does more of the same, then — while it holds the queue —
/// other callers of `LogOutboxStore.enqueue(_:root:partition:configuration:)`
/// write real spools, and ``SpoolForging`` writes one spool per kind of
/// forged record (kept aside: a damage adds one to a copy); then it closes,
/// leaving the spools for the next open. Two small queues give a checkpoint
/// of another queue (same key and partition) and one of the other kind.
struct StoreBase: Sendable {
    static let partition = "store-torture"
    static let types = (0..<4).map { "store-type-\($0)" }
    /// Small, so a few entries of each base keep their payload in a file.
    static let largePayloadThreshold = 2048

    struct Written: Sendable, Hashable {
        var type: String
        var endpoint: String
        var payload: [UInt8]
    }

    /// A spool the workload wrote, by its directory name.
    struct Spool: Sendable {
        var name: String
        var entries: [OutboxEntry.ID: Written]
    }

    /// A spool with one forged record between two good ones.
    struct ForgedSpool: Sendable {
        var name: String
        var forgery: SpoolForging.Forgery
        /// The spool directory's contents.
        var tree: FileTree
        var good: [OutboxEntry.ID: Written]
        var forged: OutboxEntry.ID
        var forgedWritten: Written
    }

    var sealed: Bool
    /// The queue's directory in ``tree``: `partitions/outbox+<hex>`.
    var queue: String
    /// Its spools' directory in ``tree``: `spools/outbox+<hex>`.
    var spoolsPath: String
    var tree: FileTree
    /// `SCHEDULE` as the first session left it.
    var older: [UInt8]
    /// Another queue's `SCHEDULE`: same kind, key and partition.
    var foreign: [UInt8]
    /// A `SCHEDULE` of the other kind (sealed for a plain base, plain for a sealed one).
    var otherFormat: [UInt8]
    /// Entries enqueued directly and not delivered.
    var live: [OutboxEntry.ID: Written]
    /// Entries delivered (each has a completion).
    var delivered: [OutboxEntry.ID]
    var spools: [Spool]
    var forged: [ForgedSpool]
    /// Live entries whose payload is in a file, with no dependencies and no
    /// scope (at least one): the file's path in ``tree``.
    var payloadFiles: [OutboxEntry.ID: String]

    var checkpointPath: String { queue + "/SCHEDULE" }

    static func configuration(sealed: Bool, seed: UInt64) -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.log = TortureLogConfiguration.make()
        configuration.largePayloadThreshold = largePayloadThreshold
        if sealed { try? configuration.setEncryptionKey(OutboxWorker.encryptionKey(seed: seed)) }
        return configuration
    }

    static func make(seed: UInt64, number: Int, sealed: Bool, directory: String) async throws -> StoreBase {
        try await Blocking.freshDirectory(directory)
        let root = directory + "/root"
        let configuration = configuration(sealed: sealed, seed: seed)
        var workload = StoreWorkload(
            random: SplitMix64.derived(seed: seed, stream: 0x5354_4F52_0000_0000 | UInt64(number) << 1 | (sealed ? 1 : 0)),
            root: root, label: "\(number)")

        var store = try await LogOutboxStore.open(root: FilePath(root), partition: partition, configuration: configuration)
        try await workload.session(store, count: 8 + workload.random.next(below: 16))
        try await store.close()
        let queue = "partitions/" + (store.directory.lastComponent?.string ?? "")
        let older = try await Blocking.run { Array(try Data(contentsOf: URL(fileURLWithPath: root + "/" + queue + "/SCHEDULE"))) }

        store = try await LogOutboxStore.open(root: FilePath(root), partition: partition, configuration: configuration)
        try await workload.session(store, count: 8 + workload.random.next(below: 16))
        try await workload.enqueueVictim(store)
        let spoolsPath = "spools/" + (store.directory.lastComponent?.string ?? "")
        for _ in 0..<(1 + workload.random.next(below: 3)) {
            try await workload.spool(into: root + "/" + spoolsPath, configuration: configuration)
        }
        var forged: [ForgedSpool] = []
        for forgery in SpoolForging.Forgery.allCases {
            forged.append(try await workload.forge(forgery, spools: root + "/" + spoolsPath, configuration: configuration))
        }
        try await store.close()
        let tree = try await Blocking.run { try FileTree.read(root) }

        let foreign = try await smallQueue(seed: seed, sealed: sealed, directory: directory + "/foreign")
        let otherFormat = try await smallQueue(seed: seed, sealed: !sealed, directory: directory + "/other")
        await Blocking.remove(directory)
        return StoreBase(
            sealed: sealed, queue: queue, spoolsPath: spoolsPath, tree: tree, older: older, foreign: foreign,
            otherFormat: otherFormat, live: workload.live, delivered: workload.delivered, spools: workload.spools,
            forged: forged, payloadFiles: workload.payloadFiles.mapValues { String($0.dropFirst(root.count + 1)) })
    }

    /// The checkpoint of a small queue of its own: three entries, one delivered.
    private static func smallQueue(seed: UInt64, sealed: Bool, directory: String) async throws -> [UInt8] {
        let store = try await LogOutboxStore.open(
            root: FilePath(directory), partition: partition, configuration: configuration(sealed: sealed, seed: seed))
        var ids: [OutboxEntry.ID] = []
        for index in 0..<3 {
            let request = OutboxEnqueueRequest(
                type: types[index], method: "POST", endpoint: "/small/\(index)", payload: Array("small \(index)".utf8))
            _ = try await store.enqueue(request)
            ids.append(request.id)
        }
        _ = try await store.beginAttempt(ids[0], at: Date(), lease: .seconds(30))
        try await store.recordSuccess(ids[0], serverID: "small-0", at: Date())
        let path = store.directory.appending("SCHEDULE").string
        try await store.close()
        return try await Blocking.run { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
    }
}
