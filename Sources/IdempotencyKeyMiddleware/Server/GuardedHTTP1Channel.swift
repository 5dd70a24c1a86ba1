import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1 channel with a deadline for each request's head and
/// one for its body (``RequestDeadlines``). Hummingbird's idle timer only
/// counts whole request parts and restarts at every body part, so a client
/// trickling header or body bytes would otherwise hold the connection
/// forever.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let inner: HTTP1Channel
    let requestHeadTimeout: TimeAmount?
    let requestBodyTimeout: TimeAmount?
    let minimumBodyRate: Int?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // Runs on the channel's event loop, and HTTP1Channel configures its
        // pipeline synchronously: the handlers can go in around its own.
        let configured = inner.setup(channel: channel, logger: logger)
        guard requestHeadTimeout != nil || requestBodyTimeout != nil else { return configured }
        do {
            let deadlines = RequestDeadlines(head: requestHeadTimeout, body: requestBodyTimeout, minimumBodyRate: minimumBodyRate)
            let pipeline = channel.pipeline.syncOperations
            // Sees raw bytes, ahead of the HTTP decoder.
            try pipeline.addHandler(RequestDeadlines.RawBytesHandler(deadlines: deadlines), position: .first)
            // Sees decoded request parts and response parts, behind the codec.
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(RequestDeadlines.PartsHandler(deadlines: deadlines), position: .before(state))
            // The first head's deadline counts from the accept, so a client
            // that never sends a byte is closed at it too.
            deadlines.armHead(on: channel)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return configured
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Closes the connection once a response that carries `Connection: close`
/// has been written, instead of reading the rest of its request (a 413 must
/// not read the remaining 100 MB of an upload).
final class CloseAfterResponseHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    private var closeAfterEnd = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closeAfterEnd = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterEnd else { return context.write(data, promise: promise) }
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
        }
    }
}
