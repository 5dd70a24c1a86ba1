import Foundation
import Outbox
import OutboxHTTP
import Testing

/// How many requests a drain keeps in flight, seen from a threaded loopback
/// server whose answers take time (``RawSocketServer``, none of the
/// project's server code): every free delivery slot busy where the order
/// allows it, one at a time where it does not.
@Suite("Delivery concurrency", .serialized, .timeLimit(.minutes(5)))
struct DeliveryConcurrencyTests {
    static func dispatcher(
        _ server: RawSocketServer, store: InMemoryOutboxStore, slots: Int
    ) -> OutboxDispatcher {
        var http = HTTPOutboxHandler.Configuration(baseURL: server.baseURL)
        http.requestTimeout = .seconds(20)
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumConcurrentDeliveries = slots
        configuration.deliveryTimeout = .seconds(25)
        return OutboxDispatcher(store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: configuration)
    }

    static func enqueue(_ store: InMemoryOutboxStore, count: Int, scope: String? = nil) async throws -> [OutboxEntry.ID] {
        var ids: [OutboxEntry.ID] = []
        for index in 0..<count {
            let result = try await store.enqueue(
                OutboxEnqueueRequest(
                    type: "message", method: "POST", endpoint: "/messages/\(index)", payload: Array(#"{"n":\#(index)}"#.utf8),
                    headers: ["Content-Type": "application/json"], scope: scope))
            guard case .enqueued(let entry) = result else { throw CancellationError() }
            ids.append(entry.id)
        }
        return ids
    }

    /// More slots than the transport's old pool of 8 connections per host,
    /// and fewer.
    @Test("unscoped entries sent concurrently fill every delivery slot: the server holds maximumConcurrentDeliveries requests at once", arguments: [4, 16])
    func everySlotBusy(slots: Int) async throws {
        // Answered once `slots` requests are held together: a drain that
        // keeps fewer in flight is answered only after each 5 s wait.
        let server = try RawSocketServer { _, _ in .answerWhenHeld(together: slots, atMost: .seconds(5)) }
        defer { server.stop() }
        var configuration = OutboxStoreConfiguration()
        configuration.unscopedDelivery = .concurrent
        let store = InMemoryOutboxStore(partition: "wide", configuration: configuration)
        _ = try await Self.enqueue(store, count: 2 * slots)
        let dispatcher = Self.dispatcher(server, store: store, slots: slots)
        let report = await dispatcher.drain(until: Date().addingTimeInterval(90))
        await dispatcher.stop()

        #expect(report.delivered == 2 * slots, "\(report)")
        #expect(server.mostHeldAtOnce == slots, "requests held at once: \(server.mostHeldAtOnce), slots: \(slots)")
    }

    enum Ordered: String, CaseIterable, Sendable {
        /// Entries of one scope.
        case scoped
        /// Unscoped entries under the default ``OutboxStoreConfiguration/UnscopedDelivery/inOrder``.
        case unscopedInOrder
    }

    @Test("entries of one scope, and unscoped entries in order (the default), go one at a time in enqueue order", arguments: Ordered.allCases)
    func oneAtATime(ordered: Ordered) async throws {
        // A second request arriving while one is held releases both at once;
        // alone, each is answered after 200 ms.
        let server = try RawSocketServer { _, _ in .answerWhenHeld(together: 2, atMost: .milliseconds(200)) }
        defer { server.stop() }
        let store = InMemoryOutboxStore(partition: "ordered")
        _ = try await Self.enqueue(store, count: 6, scope: ordered == .scoped ? "conversation-1" : nil)
        let dispatcher = Self.dispatcher(server, store: store, slots: 8)
        let report = await dispatcher.drain(until: Date().addingTimeInterval(60))
        await dispatcher.stop()

        #expect(report.delivered == 6, "\(report)")
        #expect(server.mostHeldAtOnce == 1, "\(ordered): requests held at once: \(server.mostHeldAtOnce)")
        #expect(server.captures.map(\.path) == (0..<6).map { "/messages/\($0)" })
    }
}
