import Foundation
import OutboxLog
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// Room in the log is reserved under the store's lock just before each change
/// (`OutboxLog.reserveIfAvailable`): every path must commit it with the
/// change or give it back. Room kept
/// by a refused change would count against the log's bound forever, and
/// once the bound was used up every later change would wait for room that
/// never comes.
@Suite struct StoreRoomTests {
    private static func reservedBytes(_ store: LogOutboxStore) -> Int {
        (store.core.backend as! LogBackend).log.statistics.reservedBytes
    }

    /// `tight`: a log whose bound leaves no room now, so the changes wait
    /// for room outside the lock (a reservation); otherwise they take it
    /// under the lock.
    @Test(arguments: [false, true])
    func refusedAndUnchangedChangesGiveTheirRoomBack(tight: Bool) async throws {
        var subject = try await StoreUnderTest.make(.log) { configuration in
            if tight { StoreBackPressureTests.tightLog(&configuration) }
            configuration.enqueueDurability = .buffered
        }
        let store = try #require(subject.store as? LogOutboxStore)
        let kept = try await store.add(request(payload: StoreBackPressureTests.payload))
        try #require(Self.reservedBytes(store) == 0, "after an enqueue")

        // Refused by the scheduler, inside the change.
        await #expect(throws: OutboxError.self) { _ = try await store.beginAttempt(OutboxEntry.ID(), at: Date(), lease: .seconds(30)) }
        try #require(Self.reservedBytes(store) == 0, "after a refused attempt")
        await #expect(throws: OutboxError.self) {
            _ = try await store.enqueue(request(payload: "x", dependencies: [OutboxEntry.ID()]))
        }
        try #require(Self.reservedBytes(store) == 0, "after an enqueue refused for its dependency")
        // Changes nothing: a duplicate.
        guard case .duplicate = try await store.enqueue(request(kept, payload: StoreBackPressureTests.payload)) else {
            Issue.record("a second enqueue of the same id must be a duplicate")
            return
        }
        try #require(Self.reservedBytes(store) == 0, "after a duplicate enqueue")
        // A claim that finds nothing due.
        _ = try await store.claimDue(at: Date(timeIntervalSince1970: 0), limit: 10, lease: .seconds(30), accepting: { _ in true })
        try #require(Self.reservedBytes(store) == 0, "after an empty claim")

        try await InputValidationTests.expectUsable(&subject, holding: 1)
        try await subject.close()
    }
}
