/// How much of one request the connection has written, from the client's
/// write notifications: enough to say whether its last byte left, the line
/// between a request the server cannot have applied and one it may have.
///
/// async-http-client notes the request's end one event-loop hop after the
/// body's last byte; with HTTP/1.1 `Content-Length` framing that end puts
/// nothing on the wire, so a server may read the whole request and drop the
/// connection before the end is noted. The body's bytes are counted
/// instead, and the end is needed only when the length is unknown (chunked,
/// whose last chunk is written at the end). On HTTP/2 the end is the
/// stream's END_STREAM flag: counting the request sent before it errs on
/// the safe side (an attempt that may have been applied).
struct RequestWriteProgress: Sendable, Hashable {
    /// The body's length on the wire; `nil` when only its end tells.
    let bodyLength: Int?
    private var head = false
    private var bodyBytes = 0
    private var end = false

    init(bodyLength: Int?) {
        self.bodyLength = bodyLength
    }

    mutating func headWritten() { head = true }

    mutating func bodyWritten(bytes: Int) { bodyBytes += bytes }

    mutating func endWritten() { end = true }

    /// Every byte of the request was written.
    var lastByteWritten: Bool {
        if end { return true }
        guard head, let bodyLength else { return false }
        return bodyBytes >= bodyLength
    }
}
