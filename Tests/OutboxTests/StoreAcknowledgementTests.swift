import Foundation
import OutboxLog
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// A store's acknowledgement of a change: reached without an `await` when
/// the log can write in place, and announced to observers only once it
/// has been reached.
@Suite struct StoreAcknowledgementTests {
    private static func idleLog(in root: TemporaryRoot) async throws -> OutboxLog {
        var configuration = OutboxLog.Configuration()
        configuration.logger = quietConfiguration().log.logger
        return try await OutboxLog.open(at: root.path.appending("log"), configuration: configuration)
    }

    /// An observed store once wrapped every acknowledgement in a closure
    /// that could only be awaited: every change then paid an async call
    /// and a continuation, even one already where it was asked to be (the
    /// same path makes a `written` change in place). `buffered` is reached
    /// at once whenever the log is under its bound: no timing involved.
    @Test func anAnnouncedChangeThatNeedsNoWaitIsReachedAndAnnouncedAtOnce() async throws {
        let root = TemporaryRoot()
        let log = try await Self.idleLog(in: root)
        let feed = OutboxChangeFeed()
        let changes = feed.subscribe()
        let id = OutboxEntryID()
        let ticket = try log.submit([.value("k", [1, 2, 3])])
        let acknowledgement = StoreAcknowledgement(ticket: ticket).announcing(StoreChanges(.newEntry(id)), to: feed)

        let reached = try acknowledgement.reachedWithoutWaiting(.buffered)
        #expect(reached, "a buffered change under the log's bound needs no wait")
        if reached {
            var iterator = changes.makeAsyncIterator()
            #expect(await iterator.next() == [id])
        }
        try await log.close()
    }

    /// Not reached yet (`durable` needs the writer's sync): nothing is
    /// announced until the wait.
    @Test func nothingIsAnnouncedBeforeTheChangeIsReached() async throws {
        let root = TemporaryRoot()
        let log = try await Self.idleLog(in: root)
        let feed = OutboxChangeFeed()
        let changes = feed.subscribe()
        let first = OutboxEntryID()
        let second = OutboxEntryID()
        let ticket = try log.submit([.value("k", [1])])
        let acknowledgement = StoreAcknowledgement(ticket: ticket).announcing(StoreChanges(.newEntry(first)), to: feed)
        #expect(try !acknowledgement.reachedWithoutWaiting(.durable))
        // A later change that is announced at once must arrive alone.
        let later = StoreAcknowledgement.immediate.announcing(StoreChanges(.state(second)), to: feed)
        try #require(try later.reachedWithoutWaiting(.buffered))
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next() == [second])
        try await acknowledgement.wait(.durable)
        #expect(await iterator.next() == [first])
        try await log.close()
    }
}
