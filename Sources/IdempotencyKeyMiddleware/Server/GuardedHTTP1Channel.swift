import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1 channel with a deadline for each request's head:
/// from the accept (the first request) or the first byte of a later
/// request, its head must be complete within `requestHeadTimeout`, or the
/// connection is closed. (Hummingbird's idle
/// timer only counts whole request parts, so a client trickling header
/// bytes would otherwise hold the connection forever.)
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let inner: HTTP1Channel
    let requestHeadTimeout: TimeAmount?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // Runs on the channel's event loop, and HTTP1Channel configures its
        // pipeline synchronously: the handlers can go in around its own.
        let configured = inner.setup(channel: channel, logger: logger)
        guard let requestHeadTimeout else { return configured }
        do {
            let deadline = HeadDeadline(timeout: requestHeadTimeout)
            let pipeline = channel.pipeline.syncOperations
            // Sees raw bytes, ahead of the HTTP decoder.
            try pipeline.addHandler(HeadDeadline.FirstByteHandler(deadline: deadline), position: .first)
            // Sees decoded heads and response ends, behind the codec.
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(HeadDeadline.HeadHandler(deadline: deadline), position: .before(state))
            // The first head's deadline counts from the accept, so a client
            // that never sends a byte is closed at it too.
            deadline.arm(on: channel)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return configured
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// The head deadline's state, shared by its two handlers on one event loop.
final class HeadDeadline {
    let timeout: TimeAmount
    /// True between requests: the next bytes start a head.
    var awaitingHead = true
    var timer: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    /// Starts the deadline unless it is running.
    func arm(on channel: any Channel) {
        guard timer == nil else { return }
        timer = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    /// Arms the deadline at the first byte of a head.
    final class FirstByteHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let deadline: HeadDeadline

        init(deadline: HeadDeadline) { self.deadline = deadline }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if deadline.awaitingHead { deadline.arm(on: context.channel) }
            context.fireChannelRead(data)
        }

        func channelInactive(context: ChannelHandlerContext) {
            deadline.timer?.cancel()
            deadline.timer = nil
            context.fireChannelInactive()
        }
    }

    /// Disarms it when the head is decoded; waits for the next one after
    /// the response ends.
    final class HeadHandler: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        let deadline: HeadDeadline

        init(deadline: HeadDeadline) { self.deadline = deadline }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head = unwrapInboundIn(data) {
                deadline.awaitingHead = false
                deadline.timer?.cancel()
                deadline.timer = nil
            }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { deadline.awaitingHead = true }
            context.write(data, promise: promise)
        }
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
