import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Connection hygiene for a Hummingbird server in front of the middleware:
/// settings that keep idle, slow and surplus clients from starving it.
///
/// Hummingbird's defaults have no idle timeout, no deadline for a request's
/// head and no connection cap: 500 idle connections stay open forever, a
/// client sending one header byte a second holds a connection forever, and
/// once the open-file limit is reached new clients get no answer. With these
/// limits (the reference server's defaults):
///
/// | Setting | Default | What it does |
/// |---|---|---|
/// | ``idleTimeout`` | 30 s | a connection with no request in progress and nothing read for this long is closed (Hummingbird's own timer) |
/// | ``requestHeadTimeout`` | 10 s | a request's whole head must arrive within this, counted from the accept for a connection's first request (a client that never sends a byte is closed at it) and from the first byte for a later one (slowloris) |
/// | ``maximumConnections`` | open-file limit − ``descriptorHeadroom`` | past the cap, new connections wait in the listen backlog instead of being accepted, so `accept` never fails for lack of descriptors |
/// | ``descriptorHeadroom`` | 64 | descriptors kept free for everything else: the key journal's files, logs, outgoing connections |
///
/// A connection waiting in the backlog is accepted as soon as another closes:
/// the head deadline closes connections that never send a request, the idle
/// timeout keep-alive connections idle between requests. So a new client is
/// answered after at most about the longest of the two even when such
/// clients filled the cap. Should
/// `accept` fail anyway (descriptors used elsewhere), SwiftNIO's
/// `AcceptBackoffHandler`, which every `ServerBootstrap` installs, waits 1 s
/// before accepting again rather than spinning.
///
/// Use it with Hummingbird's `Application`:
///
/// ```swift
/// let limits = ConnectionLimits()
/// let app = Application(
///     router: router, server: limits.http1(),
///     configuration: limits.apply(to: .init(address: .hostname("0.0.0.0", port: 8080))))
/// ```
public struct ConnectionLimits: Sendable, Hashable {
    /// See the table above. `nil` turns the idle timeout off.
    public var idleTimeout: Duration? = .seconds(30)
    /// See the table above. `nil` turns the deadline off.
    public var requestHeadTimeout: Duration? = .seconds(10)
    /// The most connections served at once; `nil` derives it from the
    /// process's open-file limit (`RLIMIT_NOFILE`) minus ``descriptorHeadroom``.
    /// Checked between SwiftNIO's batches of accepts (up to 4 a read), so
    /// up to 3 connections past it may be open at once.
    public var maximumConnections: Int?
    /// Descriptors left free for everything but connections.
    public var descriptorHeadroom = 64

    public init() {}

    /// No timeouts and no cap: Hummingbird's defaults.
    public static let unlimited: ConnectionLimits = {
        var limits = ConnectionLimits()
        limits.idleTimeout = nil
        limits.requestHeadTimeout = nil
        limits.maximumConnections = .max
        return limits
    }()

    /// The cap in force: ``maximumConnections``, or the open-file limit
    /// minus ``descriptorHeadroom`` (at least 1).
    public var effectiveMaximumConnections: Int {
        if let maximumConnections { return maximumConnections }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 65_536 }
        return max(1, Int(clamping: limit.rlim_cur) - descriptorHeadroom)
    }

    /// Hummingbird's HTTP/1 server with the idle timeout, the head deadline,
    /// and connections closed after any response that says
    /// `Connection: close` (the middleware's 413 and 400 for a body it will
    /// not read).
    public func http1() -> HTTPServerBuilder {
        let idle = idleTimeout.map { TimeAmount.nanoseconds(Int64($0.nanoseconds)) }
        let head = requestHeadTimeout.map { TimeAmount.nanoseconds(Int64($0.nanoseconds)) }
        return HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                inner: HTTP1Channel(
                    responder: responder,
                    configuration: .init(additionalChannelHandlers: [CloseAfterResponseHandler()], idleTimeout: idle)),
                requestHeadTimeout: head)
        }
    }

    /// `configuration` with the connection cap.
    public func apply(to configuration: ApplicationConfiguration) -> ApplicationConfiguration {
        var configuration = configuration
        let cap = effectiveMaximumConnections
        if cap < .max { configuration.availableConnectionsDelegate = MaximumAvailableConnections(cap) }
        return configuration
    }
}

extension Duration {
    var nanoseconds: Double { seconds * 1e9 }
}
