import Foundation
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

@testable import Outbox

/// What enters a queue through a spool is admitted as a direct enqueue
/// would be: its id is no longer "fresh" once spooled, its values are
/// checked, its size is judged by the owner's limits, and an entry the
/// owner cannot take is set aside and reported — never a failed store,
/// never a lost write, never a trap.
@Suite("Spool admission")
struct SpoolAdmissionTests {
    static let root: FilePath = "/data/root"

    @Test("an id spooled by this process is not admitted early after a reopen: the same write enqueued again is a duplicate")
    func spooledIDIsNotFresh() async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        _ = try await StoreReopenTests.populated(disk)
        let configuration = StoreReopenTests.configuration(disk)
        let owner = try await LogOutboxStore.open(root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        // Minted here, spooled (the owner holds the queue), moved in and delivered.
        let write = request(OutboxEntry.ID(), payload: "pay 10")
        let spooled = try await LogOutboxStore.enqueue(
            [write], root: Self.root, partition: StoreReopenTests.partition, configuration: configuration)
        guard case .spooled = spooled else {
            Issue.record("not spooled: \(spooled)")
            return
        }
        #expect(try await owner.ingestSpools().ingested == 1)
        try await owner.deliver(write.id, serverID: "srv-pay")
        try await owner.close()

        // Reopened from its checkpoint, still loading: the same write again.
        let (held, release) = StoreReopenTests.holdingTheLoad(disk)
        let reopened = try await LogOutboxStore.open(
            root: Self.root, partition: StoreReopenTests.partition, configuration: StoreReopenTests.configuration(held))
        #expect(reopened.core.loadsInBackground)
        async let again = reopened.enqueue(write)
        release.signal()
        #expect(try await again == .duplicate(write.id, status: .succeeded))
        #expect(try await reopened.entry(write.id) == nil, "the delivered write is pending again")
        try await reopened.close()
    }
}
