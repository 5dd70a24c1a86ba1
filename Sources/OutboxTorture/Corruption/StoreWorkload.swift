import Foundation
import Outbox
import OutboxLogTesting
import SystemPackage

/// The workload of a ``StoreBase``: what it wrote, and what each write was
/// told.
struct StoreWorkload {
    typealias Written = StoreBase.Written

    var random: SplitMix64
    let root: String
    let label: String
    private var index = 0
    private(set) var live: [OutboxEntry.ID: StoreBase.Written] = [:]
    private(set) var delivered: [OutboxEntry.ID] = []
    private(set) var spools: [StoreBase.Spool] = []
    /// Live entries without dependencies or scope whose payload is in a file: id → absolute path.
    private(set) var payloadFiles: [OutboxEntry.ID: String] = [:]
    private var known: [OutboxEntry.ID] = []

    init(random: SplitMix64, root: String, label: String) {
        self.random = random
        self.root = root
        self.label = label
    }

    /// A request to enqueue: a payload in the record (usually) or in a file;
    /// some scoped, some depending on an entry the queue knows.
    mutating func request(large: Bool? = nil, dependencies allowed: Bool = true, scoped: Bool? = nil) -> (OutboxEnqueueRequest, Written) {
        index += 1
        let large = large ?? (random.next(below: 4) == 0)
        let size = large ? StoreBase.largePayloadThreshold + 1 + random.next(below: 4000) : 1 + random.next(below: 400)
        let written = Written(
            type: StoreBase.types[random.next(below: StoreBase.types.count)], endpoint: "/store/\(label)/\(index)",
            payload: random.nextBytes(size))
        let dependencies = allowed && !known.isEmpty && random.next(below: 5) == 0 ? [known[random.next(below: known.count)]] : []
        let request = OutboxEnqueueRequest(
            type: written.type, method: "POST", endpoint: written.endpoint, payload: written.payload,
            scope: (scoped ?? random.nextBool()) ? "scope-\(random.next(below: 3))" : nil, dependencies: dependencies)
        return (request, written)
    }

    /// Enqueues `count` entries, then delivers about a quarter of the live
    /// ones and fails about a fifth.
    mutating func session(_ store: LogOutboxStore, count: Int) async throws {
        for _ in 0..<count {
            let (request, written) = request()
            try await enqueue(request, written, into: store)
        }
        for id in live.keys.sorted(by: { $0.description < $1.description }) {
            switch random.next(below: 20) {
            case 0..<5:
                guard (try? await store.beginAttempt(id, at: Date(), lease: .seconds(30))) != nil else { continue }
                guard (try? await store.recordSuccess(id, serverID: "server-\(id)", at: Date())) != nil else { continue }
                live[id] = nil
                payloadFiles[id] = nil
                delivered.append(id)
            case 5..<9:
                guard (try? await store.beginAttempt(id, at: Date(), lease: .seconds(30))) != nil else { continue }
                _ = try? await store.recordFailure(
                    id, OutboxFailure(.transient, httpStatus: 503, message: "failed \(id)"), retryAt: Date())
            default:
                break
            }
        }
    }

    /// An entry whose payload is in a file and that nothing holds back:
    /// every base has one for the payload damages.
    mutating func enqueueVictim(_ store: LogOutboxStore) async throws {
        let (request, written) = request(large: true, dependencies: false, scoped: false)
        try await enqueue(request, written, into: store)
    }

    private mutating func enqueue(_ request: OutboxEnqueueRequest, _ written: Written, into store: LogOutboxStore) async throws {
        guard case .enqueued(let entry) = try await store.enqueue(request) else {
            throw OutboxError(.invalidArgument, "the store base's enqueue was not enqueued")
        }
        live[request.id] = written
        known.append(request.id)
        // A payload damage's victim: nothing but its own file holds it back in a drain.
        if let file = entry.largePayload?.file, request.dependencies.isEmpty, request.scope == nil {
            payloadFiles[request.id] = file.string
        }
    }

    /// One real spool, written while the queue is held: another caller's
    /// `LogOutboxStore.enqueue(_:root:partition:configuration:)`.
    mutating func spool(into directory: String, configuration: OutboxStoreConfiguration) async throws {
        var requests: [OutboxEnqueueRequest] = []
        var entries: [OutboxEntry.ID: Written] = [:]
        for _ in 0..<(1 + random.next(below: 3)) {
            let (request, written) = request(dependencies: false)
            requests.append(request)
            entries[request.id] = written
        }
        let before = Self.spoolNames(directory)
        let result = try await LogOutboxStore.enqueue(
            requests, root: FilePath(root), partition: StoreBase.partition, configuration: configuration)
        guard case .spooled = result else { throw OutboxError(.invalidArgument, "the store base's spool write went direct") }
        guard let name = Self.spoolNames(directory).subtracting(before).first else {
            throw OutboxError(.notFound, "the store base's spool write left no spool")
        }
        spools.append(StoreBase.Spool(name: name, entries: entries))
    }

    /// A spool with a good record, a forged one, and a good one; read into
    /// memory and removed from the root (a damage adds it to a copy).
    mutating func forge(
        _ forgery: SpoolForging.Forgery, spools: String, configuration: OutboxStoreConfiguration
    ) async throws -> StoreBase.ForgedSpool {
        let records = (0..<3).map { _ in request(large: false, dependencies: false) }
        let name = try await SpoolForging.write(
            records.enumerated().map { ($0.element.0, $0.offset == 1 ? forgery : nil) }, partition: StoreBase.partition,
            spools: FilePath(spools), configuration: configuration)
        let tree = try await Blocking.run {
            let tree = try FileTree.read(spools + "/" + name)
            try FileManager.default.removeItem(atPath: spools + "/" + name)
            try? FileManager.default.removeItem(atPath: spools + "/" + name + ".lock")
            return tree
        }
        return StoreBase.ForgedSpool(
            name: name, forgery: forgery, tree: tree,
            good: [records[0].0.id: records[0].1, records[2].0.id: records[2].1], forged: records[1].0.id,
            forgedWritten: records[1].1)
    }

    static func spoolNames(_ spools: String) -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: spools)) ?? []
        return Set(names.filter { $0.hasPrefix("spool+") && !$0.hasSuffix(".lock") })
    }
}
