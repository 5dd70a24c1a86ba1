import Foundation
import OutboxLocking

#if canImport(Network)
import Network
#endif

/// Tells the dispatcher when the device goes online or offline.
public protocol ConnectivityMonitor: Sendable {
    /// The current state, then every change.
    func updates() -> AsyncStream<Bool>
}

/// Connectivity the app reports itself (`setOnline(_:)`): for Linux
/// servers, tests, and apps with their own reachability logic.
public final class ManualConnectivityMonitor: ConnectivityMonitor {
    private let state: Locked<(online: Bool, continuations: [UInt64: AsyncStream<Bool>.Continuation], next: UInt64)>

    public init(online: Bool = true) { state = Locked((online, [:], 0)) }

    public var isOnline: Bool { state.withLock { $0.online } }

    public func setOnline(_ online: Bool) {
        let continuations = state.withLock { state -> [AsyncStream<Bool>.Continuation] in
            guard state.online != online else { return [] }
            state.online = online
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.yield(online) }
    }

    public func updates() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            state.continuations[state.next] = continuation
            continuation.yield(state.online)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) } }
        return stream
    }
}

#if canImport(Network)
/// Connectivity from `NWPathMonitor` (Apple platforms).
@available(macOS 10.14, iOS 12, tvOS 12, watchOS 5, *)
public final class NetworkPathMonitor: ConnectivityMonitor {
    public init() {}

    public func updates() -> AsyncStream<Bool> {
        AsyncStream { continuation in
            let monitor = NWPathMonitor()
            monitor.pathUpdateHandler = { path in continuation.yield(path.status == .satisfied) }
            continuation.onTermination = { _ in monitor.cancel() }
            monitor.start(queue: DispatchQueue(label: "outbox.connectivity"))
        }
    }
}
#endif
