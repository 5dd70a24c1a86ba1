import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird application started behind ``ConnectionLimits`` and
/// listening: the port it bound (the one asked for, or a free one for 0)
/// and the task that serves until ``stop()``.
public struct ListeningServer: Sendable {
    public let port: Int
    public let task: Task<Void, any Error>
    private let group: ServiceGroup

    /// Stops serving and waits until it has: a graceful shutdown (no new
    /// connections; those accepted are served and closed), cancelled after
    /// ``gracefulShutdownLimit`` if a connection holds it up. Cancelling
    /// ``task`` instead can trap in SwiftNIO when a connection was accepted
    /// but not yet handed to the server: its channel is then dropped without
    /// being closed, and NIO treats that as a programmer error.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// How long a graceful shutdown may wait for open connections before
    /// they are cancelled.
    public static let gracefulShutdownLimit = Duration.seconds(2)

    /// The bind failed: the address in use, a port not allowed, a name that does not resolve.
    public struct CannotListen: Error, CustomStringConvertible {
        public var host: String
        public var port: Int
        /// The server's own error, if it gave one.
        public var reason: String?
        public var description: String { "cannot listen on \(host):\(port)" + (reason.map { ": \($0)" } ?? "") }
    }

    /// Starts `router` on `host:port` behind `limits` and returns once it
    /// listens. A server that cannot bind ends its run, which ends the wait
    /// for its port too: the bind's error is thrown, never waited on forever.
    public static func start<Builder: HTTPResponderBuilder>(
        _ router: Builder, host: String, port: Int, limits: ConnectionLimits, logger: Logger
    ) async throws(CannotListen) -> ListeningServer where Builder.Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, server: limits.http1(),
            configuration: limits.apply(to: .init(address: .hostname(host, port: port))),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        var configuration = ServiceGroupConfiguration(services: [app], logger: logger)
        configuration.maximumGracefulShutdownDuration = gracefulShutdownLimit
        let group = ServiceGroup(configuration: configuration)
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else {
            task.cancel()
            var reason: String?
            if case .failure(let error) = await task.result { reason = "\(error)" }
            throw CannotListen(host: host, port: port, reason: reason)
        }
        return ListeningServer(port: bound, task: task, group: group)
    }
}
