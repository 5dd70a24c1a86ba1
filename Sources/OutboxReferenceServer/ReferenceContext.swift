import Hummingbird
import Logging
import NIOCore

/// The reference server's request context: Hummingbird's basics plus the
/// connection, so a fault can drop it.
public struct ReferenceContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    public let channel: any Channel
    /// Set by a ``ServerFaults/slowApply`` fault: how long the handler works
    /// (with the key in progress) before the write is applied.
    var slowApplyDelay: Duration?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
