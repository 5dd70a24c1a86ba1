import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// Which parent a quarantined dependent waits for is recorded as a value,
/// not read back from its reason: text that reads like a dependency failure
/// (an app's or a handler's reason) revives nothing, and the recorded cause
/// survives a reopen (from the log, and from the checkpoint).
@Suite("Dependency causes")
struct DependencyCauseTests {
    @Test(
        "an entry quarantined by the app with a reason that reads like its parent's failure is not revived with the parent",
        arguments: StoreKind.allCases)
    func lookalikeReasonRevivesNothing(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let parent = try await subject.store.add(request())
        let child = try await subject.store.add(request(dependencies: [parent]))
        _ = try await subject.store.quarantine(child, OutboxFailure(.permanent, message: "dependencyFailed: \(parent) is quarantined"))
        _ = try await subject.store.quarantine(parent, OutboxFailure(.permanent, httpStatus: 400, message: "HTTP 400"))
        _ = try await subject.store.retry(parent, at: Date())
        #expect(try await subject.store.status(parent) == .pending)
        #expect(try await subject.store.status(child) == .quarantined)
        try await subject.close()
    }

    @Test("a dependent quarantined with its parent is revived with it after a reopen, from the log and from the checkpoint", arguments: [false, true])
    func causeSurvivesReopen(checkpoint: Bool) async throws {
        let root = TemporaryRoot()
        var store = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        let parent = try await store.add(request())
        let child = try await store.add(request(dependencies: [parent]))
        _ = try await store.quarantine(parent, OutboxFailure(.permanent, httpStatus: 400, message: "HTTP 400"))
        #expect(try await store.status(child) == .quarantined)
        try await store.close()
        if !checkpoint {
            let files = FileManager.default.enumerator(atPath: root.path.string)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix("/" + StoreCheckpoint.fileName) {
                try FileManager.default.removeItem(atPath: root.path.string + "/" + file)
            }
        }
        store = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        _ = try await store.retry(parent, at: Date())
        #expect(store.core.loadedFrom == (checkpoint ? .checkpoint : .everyEntry))
        #expect(try await store.status(child) == .pending)
        try await store.close()
    }
}
