import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The head and body deadlines of one connection's requests, kept by two
/// handlers on its event loop (so without locks):
///
/// - **Head**: from the accept (for the first request) or from the first
///   byte of a later one, the whole head must be decoded within `head`, or
///   the connection is closed. Counting from the accept closes a client that
///   never sends a byte; counting from the first byte of a later request
///   leaves keep-alive connections between requests to the idle timeout.
/// - **Body**: from the decoded head, the body must be complete within
///   `body`, plus one second for every `minimumBodyRate` bytes received. A
///   body past its deadline is answered 408 and the connection closed (only
///   closed if a response has begun). Hummingbird's idle timer restarts at
///   every body part, so without this a body sent one byte at a time would
///   hold its connection, and so a slot under the connection cap, forever.
final class RequestDeadlines {
    let head: TimeAmount?
    let body: TimeAmount?
    /// Bytes per second; `nil`: the body deadline does not move.
    let minimumBodyRate: Int?

    /// True between requests: the next bytes start a head.
    private(set) var awaitingHead = true
    private var headTimer: Scheduled<Void>?
    private var bodyTimer: Scheduled<Void>?
    /// Between a request's decoded head and its end.
    private var readingRequest = false
    private var bodyStart = NIODeadline.now()
    private var bodyBytes = 0
    /// Requests whose response has not ended (more than one if pipelined).
    private var responsesOwed = 0
    /// A response head was written and its end not yet.
    private var responseStarted = false

    init(head: TimeAmount?, body: TimeAmount?, minimumBodyRate: Int?) {
        self.head = head
        self.body = body
        self.minimumBodyRate = minimumBodyRate.flatMap { $0 > 0 ? $0 : nil }
    }

    /// Starts the head deadline unless it is running or off.
    func armHead(on channel: any Channel) {
        guard let head, headTimer == nil else { return }
        headTimer = channel.eventLoop.assumeIsolated().scheduleTask(in: head) { channel.close(promise: nil) }
    }

    func cancelAll() {
        headTimer?.cancel()
        headTimer = nil
        bodyTimer?.cancel()
        bodyTimer = nil
    }

    /// When the body must be complete, given what has arrived.
    private var bodyDeadline: NIODeadline? {
        guard let body else { return nil }
        let due = bodyStart + body
        guard let minimumBodyRate else { return due }
        let earned = Double(bodyBytes) / Double(minimumBodyRate) * 1e9
        return due + .nanoseconds(earned < 9e18 ? Int64(earned) : .max)
    }

    private func updateAwaitingHead() {
        awaitingHead = !readingRequest && responsesOwed == 0
    }

    // MARK: Decoded request parts and response parts

    func headRead(context: ChannelHandlerContext) {
        headTimer?.cancel()
        headTimer = nil
        readingRequest = true
        responsesOwed += 1
        updateAwaitingHead()
        bodyStart = .now()
        bodyBytes = 0
        scheduleBodyCheck(context: context)
    }

    func bodyRead(_ bytes: Int) {
        bodyBytes = bodyBytes.addingReportingOverflow(bytes).overflow ? .max : bodyBytes + bytes
    }

    func endRead() {
        readingRequest = false
        bodyTimer?.cancel()
        bodyTimer = nil
        updateAwaitingHead()
    }

    func responseHeadWritten() { responseStarted = true }

    func responseEndWritten() {
        responseStarted = false
        responsesOwed = max(0, responsesOwed - 1)
        updateAwaitingHead()
    }

    // MARK: The body deadline

    private func scheduleBodyCheck(context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        guard let due = bodyDeadline else { return }
        bodyTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            bodyTimer = nil
            guard readingRequest else { return }
            // Bytes that arrived since moved the deadline: check again then.
            if let later = bodyDeadline, later > .now() { return scheduleBodyCheck(context: context) }
            bodyTimedOut(context: context)
        }
    }

    /// Answers 408 if this request's response has not begun (and no earlier
    /// pipelined one is still owed), then closes the connection.
    private func bodyTimedOut(context: ChannelHandlerContext) {
        let channel = context.channel
        guard responsesOwed == 1, !responseStarted else { return channel.close(promise: nil) }
        let head = HTTPResponse(status: .requestTimeout, headerFields: [.connection: "close", .contentLength: "0"])
        context.write(NIOAny(HTTPResponsePart.head(head)), promise: nil)
        context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil))).assumeIsolated().whenComplete { _ in channel.close(promise: nil) }
    }
}

extension RequestDeadlines {
    /// Sees raw bytes, ahead of the HTTP decoder: starts the head deadline
    /// at the first byte of a request after the first.
    final class RawBytesHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let deadlines: RequestDeadlines

        init(deadlines: RequestDeadlines) { self.deadlines = deadlines }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if deadlines.awaitingHead { deadlines.armHead(on: context.channel) }
            context.fireChannelRead(data)
        }

        func channelInactive(context: ChannelHandlerContext) {
            deadlines.cancelAll()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            deadlines.cancelAll()
        }
    }

    /// Sees decoded request parts and the response parts, behind the codec.
    final class PartsHandler: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        let deadlines: RequestDeadlines

        init(deadlines: RequestDeadlines) { self.deadlines = deadlines }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: deadlines.headRead(context: context)
            case .body(let bytes): deadlines.bodyRead(bytes.readableBytes)
            case .end: deadlines.endRead()
            }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            switch unwrapOutboundIn(data) {
            case .head: deadlines.responseHeadWritten()
            case .body: break
            case .end: deadlines.responseEndWritten()
            }
            context.write(data, promise: promise)
        }
    }
}
