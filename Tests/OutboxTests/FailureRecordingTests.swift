import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// What a store records of a failure is what it reads back, and nothing a
/// caller hands it makes the queue unreadable: a status no answer has, a
/// dependency failure only the store itself may record, a message of any
/// length or any characters.
@Suite("Failure recording")
struct FailureRecordingTests {
    @Test("an HTTP status no answer has is refused, changes nothing, and the queue reopens", arguments: StoreKind.allCases)
    func impossibleStatusIsRefused(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let id = try await subject.store.add(request())
        let now = Date()
        _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
        for status in [-2, -1, 0, 99, 1000, Int.max, Int.min] {
            let failure = OutboxFailure(.transient, httpStatus: status, message: "odd")
            await expectOutboxError(.invalidArgument) { try await subject.store.recordFailure(id, failure, retryAt: now) }
            await expectOutboxError(.invalidArgument) { try await subject.store.quarantine(id, failure) }
            await expectOutboxError(.invalidArgument) { try await subject.store.markConflict(id, failure) }
        }
        #expect(try await subject.store.status(id) == .inFlight)
        _ = try await subject.store.recordFailure(id, OutboxFailure(.transient, httpStatus: 599), retryAt: now)
        try await subject.reopen(now: now)
        #expect(try await subject.store.entry(id)?.lastFailure == OutboxFailure(.transient, httpStatus: 599))
        try await subject.close()
    }

    @Test("a dependency failure is the store's to record: handed in, it is refused and the queue reopens", arguments: StoreKind.allCases)
    func dependencyCauseIsTheStores(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let parent = try await subject.store.add(request())
        let child = try await subject.store.add(request(dependencies: [parent]))
        let now = Date()
        _ = try await subject.store.beginAttempt(parent, at: now, lease: .seconds(30))
        for forged in [OutboxFailure(.dependency(.quarantined(parent))), OutboxFailure(.dependency(.gone(child)))] {
            await expectOutboxError(.invalidArgument) { try await subject.store.recordFailure(parent, forged, retryAt: now) }
            await expectOutboxError(.invalidArgument) { try await subject.store.quarantine(parent, forged) }
            await expectOutboxError(.invalidArgument) { try await subject.store.markConflict(parent, forged) }
            await expectOutboxError(.invalidArgument) { try await subject.store.quarantine(child, forged) }
        }
        #expect(try await subject.store.status(parent) == .inFlight)
        #expect(try await subject.store.status(child) == .pending)
        try await subject.reopen(now: now)
        #expect(try await subject.store.status(child) == .pending)
        try await subject.close()
    }

    @Test("an attempt a crash cut short reads back as an expired lease", arguments: StoreKind.allCases)
    func crashedAttemptIsAnExpiredLease(kind: StoreKind) async throws {
        guard kind == .log else { return }  // only a reopen shows a crash
        var subject = try await StoreUnderTest.make(kind)
        let id = try await subject.store.add(request())
        let now = Date()
        _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
        _ = try await subject.store.recordFailure(id, OutboxFailure(.transient, httpStatus: 500, message: "first"), retryAt: now)
        _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
        try await subject.reopen(now: now.addingTimeInterval(60))
        let entry = try #require(try await subject.store.entry(id))
        #expect(entry.status == .pending)
        #expect(entry.lastFailure?.cause == .leaseExpired, "\(entry.lastFailure.map(String.init(describing:)) ?? "none")")
        #expect(entry.outcomeUnknownSince != nil)
        try await subject.close()
    }

    @Test("a message is kept to 2,048 bytes of UTF-8, cut between scalars, the same in memory, in events and on disk", arguments: StoreKind.allCases)
    func messagesAreBoundedInBytes(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        // One character of 3,000 scalars, and text whose cut falls inside a 4-byte scalar.
        let combining = "e" + String(repeating: "\u{301}", count: 3000)
        let emoji = "a" + String(repeating: "😀", count: 1000)
        for message in [combining, emoji] {
            let id = try await subject.store.add(request())
            _ = try await subject.store.beginAttempt(id, at: now, lease: .seconds(30))
            _ = try await subject.store.recordFailure(id, OutboxFailure(.transient, message: message), retryAt: now)
            let kept = try #require(try await subject.store.entry(id)?.lastFailure?.message)
            #expect(kept.utf8.count <= OutboxFailure.maximumMessageBytes)
            #expect(kept.utf8.count > OutboxFailure.maximumMessageBytes - 4)
            #expect(message.unicodeScalars.starts(with: kept.unicodeScalars))
            #expect(OutboxFailure(.transient, message: message).message == kept)
            try await subject.reopen(now: now)
            #expect(try await subject.store.entry(id)?.lastFailure?.message == kept)
        }
        try await subject.close()
    }

    @Test("a handler's impossible HTTP status is recorded without it, the number kept in the message")
    func handlerStatusOutOfRange() async throws {
        let fixture = DispatcherFixture()
        fixture.handler.script("odd", .permanent(reason: "teapot", httpStatus: -7))
        let id = try await fixture.add("odd")
        await fixture.dispatcher.flush()
        let failure = try #require(try await fixture.store.entry(id)?.lastFailure)
        #expect(failure.cause == .permanent)
        #expect(failure.httpStatus == nil)
        #expect(failure.message?.contains("-7") == true, "\(failure)")
    }
}
