import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxHTTP
import OutboxLocking
import OutboxReferenceServer
import SystemPackage

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The reference servers the demo's app delivers to: one in this process
/// (keys in a durable key store), or N `outbox serve --postgres` processes on one
/// database, which the app reaches round-robin.
struct DemoServers {
    let baseURLs: [URL]
    /// The ledger of every write applied, across the servers.
    let ledger: @Sendable () async throws -> ReferenceLedger
    let stop: @Sendable () async -> Void

    /// One server in this process, keys in a durable key store under `directory`.
    static func inProcess(faults: ServerFaults, directory: FilePath, latency: Duration) async throws -> DemoServers {
        let keys = try await LogIdempotencyKeyStore.open(at: directory.appending("server-keys"))
        let server = try await ReferenceServer.start(
            faults: faults, keyStore: keys, latency: latency > .zero ? ServerLatency(base: latency) : nil)
        return DemoServers(
            baseURLs: [server.baseURL], ledger: { server.ledger },
            stop: {
                await server.stop()
                try? await keys.close()
            })
    }

    /// `count` `outbox serve` processes on the PostgreSQL database at `url`,
    /// in a scope of their own (this run's keys and writes only).
    static func processes(
        count: Int, postgres url: String, faultRate: Double, seed: UInt64, latency: Duration
    ) async throws -> DemoServers {
        let scope = "demo-\(UUID().uuidString.lowercased())"
        var children: [ServeChild] = []
        do {
            for index in 0..<count {
                children.append(
                    try await ServeChild.start([
                        "--port", "0", "--postgres", url, "--postgres-scope", scope, "--fault-rate", "\(faultRate)",
                        "--seed", "\(seed &+ UInt64(index))", "--debug-exit-with-parent",
                        "--latency", "\(DemoReport.milliseconds(latency))ms",
                    ]))
            }
        } catch {
            for child in children { await child.stop() }
            throw error
        }
        let started = children
        let urls = started.map(\.baseURL)
        return DemoServers(
            baseURLs: urls,
            ledger: {
                var ledgers: [ReferenceLedger] = []
                for url in urls {
                    let (data, _) = try await URLSession.shared.data(from: url.appendingPathComponent("ledger"))
                    ledgers.append(try JSONDecoder().decode(ReferenceLedger.self, from: data))
                }
                return ReferenceLedger.acrossServers(ledgers)
            },
            stop: { for child in started { await child.stop() } })
    }
}

/// Delivers each attempt to the next of several servers in turn: a retry
/// of a write usually lands on another server than its first attempt.
struct RoundRobinHandler: OutboxHandler {
    let handlers: [HTTPOutboxHandler]
    private let next = Locked(0)

    init(handlers: [HTTPOutboxHandler]) {
        precondition(!handlers.isEmpty)
        self.handlers = handlers
    }

    var conflictPolicy: OutboxConflictPolicy { handlers[0].conflictPolicy }

    private func pick() -> HTTPOutboxHandler {
        handlers[next.withLock { index in
            defer { index = (index + 1) % handlers.count }
            return index
        }]
    }

    func deliver(_ delivery: OutboxDelivery) async throws -> OutboxOutcome { try await pick().deliver(delivery) }

    func resendAfterConflict(_ delivery: OutboxDelivery) async throws -> OutboxOutcome { try await pick().resendAfterConflict(delivery) }
}
