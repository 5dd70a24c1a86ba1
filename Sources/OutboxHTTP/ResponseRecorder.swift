import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import OutboxLocking

/// Collects one response (status, lower-cased headers, body) and notes
/// how much of the request has been written (``RequestWriteProgress``).
/// Called on the task's event loop; read after the task's future completes.
final class ResponseRecorder: HTTPClientResponseDelegate {
    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    private struct State {
        var progress: RequestWriteProgress
        var status = 0
        var headers: [String: String] = [:]
        var body: [UInt8] = []
    }

    private let state: Locked<State>

    /// - Parameter bodyLength: the body's bytes on the wire, `nil` if
    ///   unknown until its end (chunked).
    init(bodyLength: Int?) {
        state = Locked(State(progress: RequestWriteProgress(bodyLength: bodyLength)))
    }

    /// The request's last byte was written: the server may have applied it.
    var requestSent: Bool { state.withLock { $0.progress.lastByteWritten } }

    func didSendRequestHead(task: HTTPClient.Task<Response>, _ head: HTTPRequestHead) {
        state.withLock { $0.progress.headWritten() }
    }

    func didSendRequestPart(task: HTTPClient.Task<Response>, _ part: IOData) {
        state.withLock { $0.progress.bodyWritten(bytes: part.readableBytes) }
    }

    func didSendRequest(task: HTTPClient.Task<Response>) {
        state.withLock { $0.progress.endWritten() }
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLock { state in
            // An answer started: the whole request reached the server, or
            // the server answered early (it will not apply a request it did
            // not read).
            state.status = Int(head.status.code)
            for (name, value) in head.headers {
                let key = name.lowercased()
                state.headers[key] = state.headers[key].map { $0 + ", " + value } ?? value
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        state.withLock { state in
            // Enough for any server id or error excerpt; the rest is read and dropped.
            let room = max(0, HTTPOutboxHandler.maximumResponseBytes - state.body.count)
            state.body.append(contentsOf: buffer.readableBytesView.prefix(room))
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        state.withLock { Response(status: $0.status, headers: $0.headers, body: $0.body) }
    }
}
