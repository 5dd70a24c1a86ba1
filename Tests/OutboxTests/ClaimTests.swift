import Foundation
import Outbox
import Testing

/// `claimDue`: due entries handed out for delivery, in flight at once.
@Suite("Claiming due entries")
struct ClaimTests {
    @Test("a claim takes due entries best first, puts them in flight with the attempt counted, once", arguments: StoreKind.allCases)
    func claimOrderAndState(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let now = Date()
        let low = try await subject.store.add(request(priority: -1))
        let a1 = try await subject.store.add(request(scope: "a"))
        let a2 = try await subject.store.add(request(scope: "a"))
        let urgent = try await subject.store.add(request(priority: 3))
        let first = try await subject.claim(at: now, limit: 3)
        #expect(first.entries.map(\.id) == [urgent, a1, low])
        for entry in first.entries {
            #expect(entry.status == .inFlight)
            #expect(entry.attempts == 1)
            #expect(abs(entry.nextAttemptAt.timeIntervalSince(now.addingTimeInterval(30))) < 0.01)
            #expect(entry.payload == Array("{}".utf8))
        }
        // In flight: not handed out again; a2 waits behind a1 in its scope.
        #expect(try await subject.claim(at: now, limit: 10).entries.isEmpty)
        try await subject.store.recordSuccess(a1, serverID: nil, at: now)
        #expect(try await subject.claim(at: now, limit: 10).entries.map(\.id) == [a2])

        // A crash leaves claimed entries pending again, the attempt counted.
        try await subject.reopen(now: now)
        if kind == .log {
            #expect(try await subject.store.entry(urgent)?.status == .pending)
            #expect(try await subject.store.entry(urgent)?.attempts == 1)
        }
        try await subject.close()
    }

    @Test("types that are not accepted stay pending and are reported, without hiding the others", arguments: StoreKind.allCases)
    func unacceptedTypes(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        let orphan = try await subject.store.add(request(type: "removed_feature", priority: 9))
        let post = try await subject.store.add(request(type: "post"))
        let claim = try await subject.store.claimDue(at: Date(), limit: 1, lease: .seconds(30)) { $0 == "post" }
        #expect(claim.entries.map(\.id) == [post])
        #expect(claim.unaccepted == [orphan: "removed_feature"])
        #expect(try await subject.store.entry(orphan)?.status == .pending)
        #expect(try await subject.store.entry(orphan)?.attempts == 0)
        #expect(try await subject.store.dueIDs() == [orphan])
        try await subject.close()
    }

    @Test("the protocol's default claim (for other stores) behaves like the built-in ones")
    func defaultImplementation() async throws {
        let store = DefaultClaimStore(InMemoryOutboxStore())
        let orphan = try await store.add(request(type: "other", priority: 1))
        let a1 = try await store.add(request(scope: "a"))
        _ = try await store.add(request(scope: "a"))
        let claim = try await store.claimDue(at: Date(), limit: 5, lease: .seconds(30)) { $0 == "post" }
        #expect(claim.entries.map(\.id) == [a1])
        #expect(claim.entries.first?.status == .inFlight)
        #expect(claim.unaccepted == [orphan: "other"])
    }
}

extension StoreUnderTest {
    func claim(at now: Date, limit: Int) async throws -> OutboxClaim {
        try await store.claimDue(at: now, limit: limit, lease: .seconds(30)) { _ in true }
    }
}

/// A store that forwards everything but `claimDue`, so the protocol
/// extension's default runs.
private final class DefaultClaimStore: ForwardingOutboxStore {
    let wrapped: any OutboxStore
    init(_ base: any OutboxStore) { wrapped = base }
}
