import Foundation
import Logging
import Outbox
import OutboxLog
import SystemPackage
import Testing

/// A fresh temporary directory, removed when the value dies.
final class TemporaryRoot: Sendable {
    let path: FilePath

    init() {
        path = FilePath(FileManager.default.temporaryDirectory.path + "/outbox-store-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(atPath: path.string, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path.string) }
}

/// The stores the conformance suite runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case log

    var testDescription: String { rawValue }
}

/// Quiet logging: the tests provoke errors on purpose.
func quietConfiguration() -> OutboxStoreConfiguration {
    var configuration = OutboxStoreConfiguration()
    configuration.log.logger = Logger(label: "outbox.test", factory: { _ in SwiftLogNoOpLogHandler() })
    configuration.log.automaticCompactionRatio = nil
    // These suites specify the scheduling of independent unscoped entries
    // (in order is the default, and an option they test apart);
    // OutboxAppTests/SafeDefaultsTests covers the default.
    configuration.unscopedDelivery = .concurrent
    return configuration
}

/// ``quietConfiguration()`` on `fileSystem` (a simulated disk, most often).
func quietConfiguration(on fileSystem: any FileSystem) -> OutboxStoreConfiguration {
    var configuration = quietConfiguration()
    configuration.log.fileSystem = fileSystem
    return configuration
}

/// A store of `kind`, and a way to reopen it (the log store from disk; the
/// memory store is the same object).
struct StoreUnderTest: Sendable {
    let kind: StoreKind
    let root: TemporaryRoot
    let partition: String
    let configuration: OutboxStoreConfiguration
    private(set) var store: any OutboxStore

    static func make(
        _ kind: StoreKind, partition: String = "alice", configure: (inout OutboxStoreConfiguration) -> Void = { _ in }
    ) async throws -> StoreUnderTest {
        var configuration = quietConfiguration()
        configure(&configuration)
        let root = TemporaryRoot()
        let store: any OutboxStore =
            switch kind {
            case .memory: InMemoryOutboxStore(partition: partition, configuration: configuration)
            case .log: try await LogOutboxStore.open(root: root.path, partition: partition, configuration: configuration)
            }
        return StoreUnderTest(kind: kind, root: root, partition: partition, configuration: configuration, store: store)
    }

    /// Closes and reopens a log store; a no-op for the memory store.
    mutating func reopen(now: Date = Date()) async throws {
        guard kind == .log else { return }
        try await store.close()
        store = try await LogOutboxStore.open(root: root.path, partition: partition, configuration: configuration, now: now)
    }

    func close() async throws { try await store.close() }

    /// This store seen through `wrap` (a forwarding test store).
    func wrapped(_ wrap: (any OutboxStore) -> any OutboxStore) -> StoreUnderTest {
        var copy = self
        copy.store = wrap(store)
        return copy
    }
}

/// A request with sensible defaults.
func request(
    _ id: OutboxEntry.ID = OutboxEntry.ID(), type: String = "post", endpoint: String = "/posts",
    payload: String = "{}", scope: String? = nil, dependencies: [OutboxEntry.ID] = [], priority: Int = 0,
    coalescingKey: String? = nil, maxAttempts: Int? = nil
) -> OutboxEnqueueRequest {
    OutboxEnqueueRequest(
        id: id, type: type, method: "POST", endpoint: endpoint, payload: Array(payload.utf8),
        headers: ["Content-Type": "application/json"], scope: scope, dependencies: dependencies, priority: priority,
        coalescingKey: coalescingKey, maxAttempts: maxAttempts)
}

extension OutboxStore {
    /// Enqueues and returns the new entry's id.
    @discardableResult
    func add(_ request: OutboxEnqueueRequest) async throws -> OutboxEntry.ID {
        try await enqueue(request).id
    }

    func dueIDs(at now: Date = Date(), limit: Int = 100) async throws -> [OutboxEntry.ID] {
        try await dueEntries(at: now, limit: limit).map(\.id)
    }

    func status(_ id: OutboxEntry.ID) async throws -> OutboxStatus? {
        try await entry(id)?.status
    }

    /// For each of `ids` in turn: expects it to be the one entry due at
    /// `now`, then delivers it (the order a scope or a dependency imposes).
    func deliverOneAtATime(
        _ ids: [OutboxEntry.ID], at now: Date, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for id in ids {
            #expect(try await dueIDs(at: now) == [id], sourceLocation: sourceLocation)
            try await deliver(id, at: now)
        }
    }

    /// Begins and finishes one successful attempt.
    func deliver(_ id: OutboxEntry.ID, serverID: String? = nil, at now: Date = Date()) async throws {
        _ = try await beginAttempt(id, at: now, lease: .seconds(30))
        try await recordSuccess(id, serverID: serverID, at: now)
    }
}

extension OutboxEnqueueResult {
    /// The entry an `.enqueued` result wrote; nil for any other result
    /// (for `try #require(result.newEntry, "…")`).
    var newEntry: OutboxEntry? {
        guard case .enqueued(let entry) = self else { return nil }
        return entry
    }

    /// The entry a `.coalesced` result wrote and the id it replaced; nil for
    /// any other result.
    var replacement: (entry: OutboxEntry, replaced: OutboxEntry.ID)? {
        guard case .coalesced(let entry, let replaced) = self else { return nil }
        return (entry, replaced)
    }
}

/// Expects `body` to throw an ``OutboxError`` with `code`.
func expectOutboxError<T>(
    _ code: OutboxError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected \(code), but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as OutboxError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Model tests: the id of the entry enqueued at step `step`, derived from
/// the step alone. Random ids would make a failing case's printed seed
/// replay different steps (the tests pick entries by id order), so a
/// failure could not be reproduced from what the test prints.
func modelEntryID(step: Int) -> OutboxEntry.ID {
    OutboxEntry.ID(UUID(uuidString: String(format: "00000000-0000-4000-8000-%012X", step))!)
}
