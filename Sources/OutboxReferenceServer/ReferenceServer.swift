import Foundation
import HTTPTypes
import Hummingbird
import IdempotencyKeyMiddleware
import Logging
import NIOCore
import OutboxLocking

/// The reference Idempotency-Key server: the reference API behind
/// ``IdempotencyMiddleware``, with optional faults in front of both (and
/// one, ``ServerFaults/slowApply``, behind the middleware).
///
/// ```swift
/// let keys = try await LogIdempotencyKeyStore.open(at: "/var/lib/reference/keys")
/// let server = try await ReferenceServer.start(faults: .mixed(rate: 0.2), keyStore: keys)
/// // … point an HTTPOutboxHandler at server.baseURL …
/// let ledger = server.ledger   // every write applied exactly once?
/// await server.stop()
/// ```
///
/// Middleware order, outermost first: activity counting, latency, fault injection,
/// ``IdempotencyMiddleware``, the slow-apply hold, the API's handlers.
public final class ReferenceServer: Sendable {
    /// The port it listens on (127.0.0.1 unless told otherwise).
    public let port: Int
    public let host: String
    private let api: ReferenceAPI
    private let activityTracker: ServerActivity
    private let attemptLog: AttemptLogBox?
    private let server: ListeningServer

    private init(
        host: String, port: Int, api: ReferenceAPI, activity: ServerActivity, attemptLog: AttemptLogBox?,
        server: ListeningServer
    ) {
        self.host = host
        self.port = port
        self.api = api
        self.activityTracker = activity
        self.attemptLog = attemptLog
        self.server = server
    }

    /// Starts the server; returns once it is listening.
    ///
    /// - Parameters:
    ///   - port: 0 picks a free port.
    ///   - keyStore: where idempotency keys live; a choice to make
    ///     explicitly. ``LogIdempotencyKeyStore`` (durable: a retry after a
    ///     server restart is still answered from the key) for anything that
    ///     must survive a restart — `outbox serve` and `outbox demo` use it;
    ///     ``InMemoryIdempotencyKeyStore`` for tests and throwaway runs; `nil`
    ///     serves the API without the middleware (to measure its cost).
    ///   - connections: idle timeout, request-head deadline and connection
    ///     cap (``ConnectionLimits``; the defaults suit a real deployment).
    ///   - writes: where the API applies its writes; `nil` keeps them in this
    ///     process's memory. A store several processes share (the CLI's on
    ///     PostgreSQL) makes ids unique across them and lets any of them
    ///     report every write applied (``currentLedger()``).
    ///   - recordAttempts: keep an ``AttemptLog`` of every write request
    ///     (it grows with every request: for tests, not a long-running server).
    ///   - latency: how long each request waits before it is handled (a
    ///     network's round trip); `nil` answers at once.
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, faults: ServerFaults = ServerFaults(),
        keyStore: (any IdempotencyKeyStore)?,
        middleware: IdempotencyMiddleware<ReferenceContext>.Configuration = .init(),
        connections: ConnectionLimits = ConnectionLimits(),
        writes: (any ReferenceWrites)? = nil,
        recordAttempts: Bool = false,
        latency: ServerLatency? = nil,
        logger: Logger? = nil
    ) async throws -> ReferenceServer {
        let ledger = LedgerBox()
        let draw = FaultDraw(faults)
        let activity = ServerActivity()
        let router = Router(context: ReferenceContext.self)
        router.add(middleware: ActivityMiddleware(activity: activity))
        if let latency { router.add(middleware: LatencyMiddleware(latency: latency)) }
        let attemptLog = recordAttempts ? AttemptLogBox() : nil
        if let attemptLog { router.add(middleware: AttemptLogMiddleware(box: attemptLog)) }
        router.add(middleware: FaultInjectionMiddleware(draw: draw))
        if let keyStore {
            router.add(middleware: IdempotencyMiddleware(store: CountingKeyStore(base: keyStore, ledger: ledger), configuration: middleware))
        }
        router.add(middleware: SlowApplyMiddleware(activity: activity))
        let api = ReferenceAPI(ledger: ledger, faults: draw, writes: writes)
        api.register(on: router)

        var quiet = Logger(label: "outbox.reference-server")
        quiet.logLevel = .critical
        let server = try await ListeningServer.start(router, host: host, port: port, limits: connections, logger: logger ?? quiet)
        return ReferenceServer(host: host, port: server.port, api: api, activity: activity, attemptLog: attemptLog, server: server)
    }


    /// `http://host:port`
    public var baseURL: URL { URL(string: "http://\(host):\(port)")! }

    /// What the server applied and absorbed so far, when its writes are in
    /// its own memory (the default). With a shared ``ReferenceWrites``
    /// store this holds only what this process counted: read
    /// ``currentLedger()``.
    public var ledger: ReferenceLedger { api.report }

    /// What was applied (from the writes store, shared or not) and what this
    /// process absorbed so far; `GET /ledger` answers this.
    public func currentLedger() async throws -> ReferenceLedger { try await api.currentReport() }

    /// What the server is doing right now.
    public var activity: ReferenceActivity { activityTracker.snapshot }

    /// Returns once `condition` holds for the server's activity: for a test
    /// to retry while a request is held in progress
    /// (`{ $0.slowAppliesHeld > 0 }`), or to wait until every write has been
    /// answered (`{ $0.writesInFlight == 0 }`).
    public func waitForActivity(_ condition: @escaping @Sendable (ReferenceActivity) -> Bool) async {
        await activityTracker.wait(until: condition)
    }

    /// Every write request received so far, with its key; empty unless the
    /// server was started with `recordAttempts`.
    public var attempts: AttemptLog { attemptLog?.log.withLock { $0 } ?? AttemptLog() }

    /// Stops listening: a graceful shutdown (``ListeningServer/stop()``).
    public func stop() async { await server.stop() }
}
