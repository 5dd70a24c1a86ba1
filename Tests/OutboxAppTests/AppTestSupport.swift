import Foundation
import Logging
import Outbox
import Testing

// Support for the app-facing tests: everything through the public API of
// `Outbox` (no `@testable`, no package-internal lock), with a manual clock,
// so nothing sleeps and nothing is timed.

/// A handler whose answers a test decides per call, from the delivery and
/// the clock's time. Records what it was asked to deliver.
actor ScriptedServer {
    private(set) var deliveries: [OutboxDelivery] = []
    private var answer: @Sendable (OutboxDelivery, Int) -> OutboxOutcome

    /// `answer` gets the delivery and how many deliveries of that entry came before it.
    init(_ answer: @escaping @Sendable (OutboxDelivery, Int) -> OutboxOutcome = { _, _ in .delivered(serverID: nil) }) {
        self.answer = answer
    }

    func setAnswer(_ answer: @escaping @Sendable (OutboxDelivery, Int) -> OutboxOutcome) { self.answer = answer }

    /// Answers each entry's first delivery with an HTTP 500 asking for a
    /// retry after `retryAfter`, and every later one as delivered with `serverID`.
    func failFirstDelivery(retryAfter: Duration, thenDeliverAs serverID: String) {
        answer = { _, earlier in
            earlier == 0
                ? .transient(reason: "HTTP 500", httpStatus: 500, retryAfter: retryAfter) : .delivered(serverID: serverID)
        }
    }

    func deliver(_ delivery: OutboxDelivery) -> OutboxOutcome {
        let earlier = deliveries.filter { $0.id == delivery.id }.count
        deliveries.append(delivery)
        return answer(delivery, earlier)
    }

    func deliveries(of id: OutboxEntry.ID) -> [OutboxDelivery] { deliveries.filter { $0.id == id } }

    nonisolated var handler: ClosureOutboxHandler { ClosureOutboxHandler { [self] delivery in await self.deliver(delivery) } }
}

/// A plain action: its text is its payload, so a script can tell entries apart.
struct Post: OutboxAction {
    static let type = "post"
    var text: String
    var topic: String? = nil
    var after: [OutboxEntry.ID] = []
    var method: String { "POST" }
    var endpoint: String { "/posts" }
    var scope: String? { topic }
    var dependencies: [OutboxEntry.ID] { after }
    func payload() throws -> [UInt8] { Array(text.utf8) }
}

extension OutboxDelivery {
    var text: String { String(decoding: payload, as: UTF8.self) }
}

func quietLogger() -> Logger { Logger(label: "outbox.app-test", factory: { _ in SwiftLogNoOpLogHandler() }) }

func quietStoreConfiguration() -> OutboxStoreConfiguration {
    var configuration = OutboxStoreConfiguration()
    configuration.log.logger = quietLogger()
    return configuration
}

/// An in-memory store, a manual clock, a scripted server and a dispatcher
/// with the library's default configuration (only logging quietened and
/// the jitter seeded), unless `configure` changes it.
struct App {
    let store: InMemoryOutboxStore
    let clock = ManualOutboxClock()
    let server: ScriptedServer
    let dispatcher: OutboxDispatcher

    init(
        server: ScriptedServer = ScriptedServer(), store: InMemoryOutboxStore? = nil,
        configure: (inout OutboxDispatcherConfiguration) -> Void = { _ in }
    ) {
        self.server = server
        self.store = store ?? InMemoryOutboxStore(partition: "user", configuration: quietStoreConfiguration())
        var configuration = OutboxDispatcherConfiguration()
        configuration.randomSeed = 7
        configuration.logger = quietLogger()
        configure(&configuration)
        dispatcher = OutboxDispatcher(
            store: self.store, handlers: [Post.type: server.handler], configuration: configuration, clock: clock)
    }

    /// Enqueues straight into the store (no background flush racing the test).
    @discardableResult
    func add(_ post: Post) async throws -> OutboxEntry.ID {
        try await store.enqueue(OutboxEnqueueRequest(post, createdAt: clock.now())).id
    }

    /// Flushes, then moves the clock to the next retry and flushes again,
    /// until `done` holds or nothing is left to wait for; at most `rounds`
    /// times. Returns how many rounds it took.
    @discardableResult
    func pump(rounds: Int = 10_000, until done: () async throws -> Bool) async throws -> Int {
        for round in 0..<rounds {
            await dispatcher.flush()
            if try await done() { return round }
            guard let next = try await store.nextDueDate() else { return round }
            clock.set(to: max(next, clock.now()))
        }
        Issue.record("still not done after \(rounds) rounds")
        return rounds
    }

    func status(_ id: OutboxEntry.ID) async throws -> OutboxStatus? { try await store.entry(id)?.status }
    func delivered(_ id: OutboxEntry.ID) async throws -> Bool { try await store.completion(of: id) != nil }
}
