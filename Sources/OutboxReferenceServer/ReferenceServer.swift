import Foundation
import HTTPTypes
import Hummingbird
import IdempotencyKeyMiddleware
import Logging
import NIOCore
import Synchronization

/// The reference Idempotency-Key server: the reference API behind
/// ``IdempotencyMiddleware``, with optional faults in front of both.
///
/// ```swift
/// let server = try await ReferenceServer.start(faults: .mixed(rate: 0.2))
/// // … point an HTTPOutboxHandler at server.baseURL …
/// let ledger = server.ledger   // every write applied exactly once?
/// await server.stop()
/// ```
public final class ReferenceServer: Sendable {
    /// The port it listens on (127.0.0.1 unless told otherwise).
    public let port: Int
    public let host: String
    private let api: ReferenceAPI
    private let attemptLog: AttemptLogBox?
    private let task: Task<Void, any Error>

    private init(host: String, port: Int, api: ReferenceAPI, attemptLog: AttemptLogBox?, task: Task<Void, any Error>) {
        self.host = host
        self.port = port
        self.api = api
        self.attemptLog = attemptLog
        self.task = task
    }

    /// Starts the server; returns once it is listening.
    ///
    /// - Parameters:
    ///   - port: 0 picks a free port.
    ///   - keyStore: where idempotency keys live; default in memory.
    ///   - recordAttempts: keep an ``AttemptLog`` of every write request
    ///     (it grows with every request: for tests, not a long-running server).
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, faults: ServerFaults = ServerFaults(),
        keyStore: (any IdempotencyKeyStore)? = nil,
        middleware: IdempotencyMiddleware<ReferenceContext>.Configuration = .init(),
        recordAttempts: Bool = false,
        logger: Logger? = nil
    ) async throws -> ReferenceServer {
        let ledger = LedgerBox()
        let draw = FaultDraw(faults)
        let store = CountingKeyStore(base: keyStore ?? InMemoryIdempotencyKeyStore(), ledger: ledger)
        let router = Router(context: ReferenceContext.self)
        let attemptLog = recordAttempts ? AttemptLogBox() : nil
        if let attemptLog { router.add(middleware: AttemptLogMiddleware(box: attemptLog)) }
        router.add(middleware: FaultInjectionMiddleware(draw: draw))
        router.add(middleware: IdempotencyMiddleware(store: store, configuration: middleware))
        let api = ReferenceAPI(ledger: ledger, faults: draw)
        api.register(on: router)

        var quiet = Logger(label: "outbox.reference-server")
        quiet.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname(host, port: port)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger ?? quiet)
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else {
            task.cancel()
            throw ServerError.didNotStart
        }
        return ReferenceServer(host: host, port: bound, api: api, attemptLog: attemptLog, task: task)
    }

    enum ServerError: Error { case didNotStart }

    /// `http://host:port`
    public var baseURL: URL { URL(string: "http://\(host):\(port)")! }

    /// What the server applied and absorbed so far.
    public var ledger: ReferenceLedger { api.report }

    /// Every write request received so far, with its key; empty unless the
    /// server was started with `recordAttempts`.
    public var attempts: AttemptLog { attemptLog?.log.withLock { $0 } ?? AttemptLog() }

    /// Stops listening.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
