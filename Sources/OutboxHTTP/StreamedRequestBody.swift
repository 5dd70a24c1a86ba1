import AsyncHTTPClient
import NIOCore
import Outbox
import OutboxLocking

/// A request body streamed from its payload file, whose pump stops with its
/// request.
///
/// Chunks are read (and checked) off the event loop and the cooperative
/// pool, one written before the next is read. async-http-client holds a
/// stream back by not completing a write's future until the connection
/// drains; when the request fails meanwhile (its deadline, a reset),
/// version 1.37 drops that future without ever completing it. A pump that
/// only awaited it would wait forever — a task, its reader and its buffer
/// leaked for every upload that failed while held back. So each write is
/// awaited through a continuation that ``finish()`` also resumes, and the
/// transport calls ``finish()`` once its request has an outcome, returning
/// only after the pump has stopped.
final class StreamedRequestBody: Sendable {
    /// Why a write was refused: the request already has its outcome.
    struct RequestEnded: Error {}

    private struct State {
        var ended = false
        /// The write being waited on, numbered so that a late completion
        /// of one write never resumes the next.
        var pending: (number: Int, continuation: CheckedContinuation<Void, any Error>)?
        var writes = 0
        var pumps: [Task<Void, Never>] = []
    }

    private let file: OutboxLargePayload
    private let chunkBytes: Int
    private let running: Locked<Int>
    private let state = Locked(State())

    /// - Parameter running: counts pumps between their start and their end.
    init(file: OutboxLargePayload, chunkBytes: Int = 256 << 10, running: Locked<Int>) {
        self.file = file
        self.chunkBytes = chunkBytes
        self.running = running
    }

    /// The body to hand to async-http-client, with the file's length as
    /// `Content-Length`. If the file turns out damaged the stream fails
    /// before its last byte, so the request is never complete (the server
    /// sees fewer bytes than announced).
    var body: HTTPClient.Body {
        .stream(contentLength: Int64(file.count)) { writer in self.start(writer) }
    }

    /// Ends the body: a write still waiting fails, later writes and pumps
    /// are refused, and this returns once every pump started has stopped.
    func finish() async {
        let (waiting, pumps) = state.withLock { state in
            state.ended = true
            defer { state.pending = nil }
            return (state.pending?.continuation, state.pumps)
        }
        waiting?.resume(throwing: RequestEnded())
        for pump in pumps { await pump.value }
    }

    /// Starts a pump, unless the request already has its outcome: a server
    /// may answer (a replay, a refusal) before async-http-client asks for
    /// the body, and a pump started then would outlive the request.
    private func start(_ writer: HTTPClient.Body.StreamWriter) -> EventLoopFuture<Void> {
        let loop = HTTPClient.defaultEventLoopGroup.any()
        let promise = loop.makePromise(of: Void.self)
        // Checked and recorded under one lock, so finish() either refuses
        // this pump or waits for it.
        let started = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            running.withLock { $0 += 1 }
            state.pumps.append(
                Task {
                    defer { running.withLock { $0 -= 1 } }
                    do {
                        try await self.pump(into: writer)
                        promise.succeed()
                    } catch {
                        promise.fail(error)
                    }
                })
            return true
        }
        if !started { promise.fail(RequestEnded()) }
        return promise.futureResult
    }

    private func pump(into writer: HTTPClient.Body.StreamWriter) async throws {
        var reader = file.makeChunkReader(chunkBytes: chunkBytes)
        while let chunk = try await reader.next() {
            try await write(.byteBuffer(ByteBuffer(bytes: chunk)), to: writer)
        }
    }

    private func write(_ part: IOData, to writer: HTTPClient.Body.StreamWriter) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let number = state.withLock { state -> Int? in
                guard !state.ended else { return nil }
                state.writes += 1
                state.pending = (state.writes, continuation)
                return state.writes
            }
            guard let number else { return continuation.resume(throwing: RequestEnded()) }
            // Weakly: a held-back write's future that async-http-client drops
            // is kept forever by SwiftNIO (its promises are unleakable), and
            // with it this closure; it must not keep the body and its pump too.
            writer.write(part).whenComplete { [weak self] result in
                guard let self else { return }
                let waiting = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
                    guard let pending = state.pending, pending.number == number else { return nil }
                    state.pending = nil
                    return pending.continuation
                }
                waiting?.resume(with: result)
            }
        }
    }
}
