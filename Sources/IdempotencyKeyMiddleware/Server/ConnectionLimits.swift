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
/// head or body and no connection cap: 500 idle connections stay open
/// forever, a client sending one header or body byte a second holds a
/// connection forever, and once the open-file limit is reached new clients
/// get no answer. With these limits (the reference server's defaults):
///
/// | Setting | Default | What it does |
/// |---|---|---|
/// | ``idleTimeout`` | 30 s | a connection with no request in progress and nothing read for this long is closed (Hummingbird's own timer) |
/// | ``requestHeadTimeout`` | 10 s | a request's whole head must arrive within this, counted from the accept for a connection's first request (a client that never sends a byte is closed at it) and from the first byte for a later one (slowloris) |
/// | ``requestBodyTimeout`` | 30 s | from its decoded head, a request's body must arrive within this plus one second for every ``minimumBodyRate`` bytes received; past it the request is answered 408 and the connection closed |
/// | ``minimumBodyRate`` | 1024 B/s | what each second added to the body deadline is earned with: a large upload at a steady rate above it is never cut |
/// | ``maximumConnections`` | open-file limit − ``descriptorHeadroom`` | past the cap, new connections wait in the listen backlog instead of being accepted, so `accept` never fails for lack of descriptors |
/// | ``descriptorHeadroom`` | 64 | descriptors kept free for everything else: the key journal's files, logs, outgoing connections |
///
/// A connection waiting in the backlog is accepted as soon as another closes:
/// the head deadline closes connections that never send a request, the body
/// deadline those whose body trickles, the idle timeout keep-alive
/// connections idle between requests. So a new client is answered after at
/// most about the longest of these (plus the time requests already running
/// take) even when such clients filled the cap. Should `accept` fail anyway
/// (descriptors used elsewhere), SwiftNIO's `AcceptBackoffHandler`, which
/// every `ServerBootstrap` installs, waits 1 s before accepting again rather
/// than spinning.
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
    /// See the table above. `nil` turns the body deadline off. The time the
    /// handler takes to read the body counts too: a handler that reads it
    /// slowly on purpose needs a longer one.
    public var requestBodyTimeout: Duration? = .seconds(30)
    /// Bytes per second; see the table above. `nil` (or 0) makes
    /// ``requestBodyTimeout`` a deadline for the whole body, however large.
    public var minimumBodyRate: Int? = 1024
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
        limits.requestBodyTimeout = nil
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

    /// Hummingbird's HTTP/1 server with the idle timeout, the head and body
    /// deadlines, and connections closed after any response that says
    /// `Connection: close` (the middleware's 413 and 400 for a body it will
    /// not read). Durations too long for SwiftNIO's clock count as forever.
    public func http1() -> HTTPServerBuilder {
        let idle = idleTimeout.map(TimeAmount.init(clamping:))
        let head = requestHeadTimeout.map(TimeAmount.init(clamping:))
        let body = requestBodyTimeout.map(TimeAmount.init(clamping:))
        let rate = minimumBodyRate
        return HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                inner: HTTP1Channel(
                    responder: responder,
                    configuration: .init(additionalChannelHandlers: [CloseAfterResponseHandler()], idleTimeout: idle)),
                requestHeadTimeout: head, requestBodyTimeout: body, minimumBodyRate: rate)
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

extension TimeAmount {
    /// `duration` in nanoseconds, or the longest (shortest) amount if it
    /// does not fit in 64 bits (292 years).
    init(clamping duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carry) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        self = .nanoseconds(overflow || carry ? (seconds < 0 ? .min : .max) : total)
    }
}
