import Hummingbird
import Logging
import NIOCore

/// A Hummingbird application started behind ``ConnectionLimits`` and
/// listening: the port it bound (the one asked for, or a free one for 0)
/// and the task that serves until cancelled.
public struct ListeningServer: Sendable {
    public let port: Int
    public let task: Task<Void, any Error>

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
        let task = Task {
            defer { continuation.finish() }
            try await app.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else {
            task.cancel()
            var reason: String?
            if case .failure(let error) = await task.result { reason = "\(error)" }
            throw CannotListen(host: host, port: port, reason: reason)
        }
        return ListeningServer(port: bound, task: task)
    }
}
