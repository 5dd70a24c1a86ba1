import Foundation
import Outbox
import Testing

struct Transfer: OutboxAction, Codable {
    static let type = "transfer"
    let from: String
    let cents: Int
    let parent: OutboxEntry.ID?
    var method: String { "POST" }
    var endpoint: String { "/transfers" }
    var dependencies: [OutboxEntry.ID] { parent.map { [$0] } ?? [] }
}

/// Handlers registered by action type get the action back,
/// decoded from the payload the dispatcher resolved.
@Suite("Typed handlers", .timeLimit(.minutes(5)))
struct TypedHandlerTests {
    @Test("a typed handler gets its action decoded, local: references resolved; a payload that does not decode is quarantined")
    func typedHandler() async throws {
        let store = InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        let seen = Seen()
        var handlers = OutboxHandlers()
        handlers.on(Transfer.self) { transfer, delivery in
            await seen.add(transfer, sent: delivery.payload)
            return .delivered(serverID: "tr-\(transfer.cents)")
        }
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietLogger()
        let dispatcher = OutboxDispatcher(store: store, handlers: handlers, configuration: configuration)
        let first = try await dispatcher.enqueue(Transfer(from: "alice", cents: 5, parent: nil)).id
        let second = try await dispatcher.enqueue(Transfer(from: "bob", cents: 7, parent: first)).id
        _ = try await dispatcher.waitUntilDelivered(second)
        let transfers = await seen.all
        #expect(transfers.map(\.cents) == [5, 7])
        // The action as enqueued (its parent the local id); what is sent has the server's id.
        #expect(transfers.last?.parent == first)
        #expect(String(decoding: await seen.sent.last ?? [], as: UTF8.self).contains(#""parent":"tr-5""#))
        let garbage = try await store.enqueue(OutboxEnqueueRequest(
            type: Transfer.type, method: "POST", endpoint: "/transfers", payload: Array("not json".utf8)))
        await dispatcher.flush()
        let failure = try #require(try await dispatcher.status(of: garbage.id))
        #expect(failure.status == .quarantined)
        #expect(failure.lastFailure?.cause == .permanent)
        #expect(failure.lastFailure?.message?.contains("Transfer") == true)
        await dispatcher.stop()
    }
}

actor Seen {
    private(set) var all: [Transfer] = []
    private(set) var sent: [[UInt8]] = []
    func add(_ transfer: Transfer, sent payload: [UInt8]) {
        all.append(transfer)
        sent.append(payload)
    }
}
