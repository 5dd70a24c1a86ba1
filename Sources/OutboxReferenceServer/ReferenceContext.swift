import Hummingbird
import Logging
import NIOCore

/// The reference server's request context: Hummingbird's basics plus the
/// connection, so a fault can drop it.
public struct ReferenceContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
