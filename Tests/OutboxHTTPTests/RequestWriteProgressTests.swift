@testable import OutboxHTTP
import Testing

/// Whether a failed request "was sent" decides whether the dispatcher
/// counts an interrupted attempt (the server may have applied it) or gives
/// the entry back as never sent. async-http-client tells a delegate that
/// the whole request went out only when its (empty) end has been written,
/// one event-loop hop after the body's last byte: on a busy machine a
/// server can read the whole request and drop the connection in between.
/// These drive the notifications in the orders a real connection produces.
@Suite("How much of a request was written")
struct RequestWriteProgressTests {
    @Test("the body's last byte written, then the connection lost before the end was noted: sent")
    func lastBodyByteIsEnough() {
        var progress = RequestWriteProgress(bodyLength: 120)
        progress.headWritten()
        progress.bodyWritten(bytes: 100)
        #expect(!progress.lastByteWritten, "20 body bytes never left")
        progress.bodyWritten(bytes: 20)
        #expect(progress.lastByteWritten, "every byte the server needs was written")
    }

    @Test("a request without a body is whole once its head is written")
    func headAloneIsTheRequest() {
        var progress = RequestWriteProgress(bodyLength: 0)
        #expect(!progress.lastByteWritten)
        progress.headWritten()
        #expect(progress.lastByteWritten)
    }

    @Test("a body cut short is not sent, however the head went")
    func partialBodyIsNotSent() {
        var progress = RequestWriteProgress(bodyLength: 1 << 20)
        progress.headWritten()
        progress.bodyWritten(bytes: 16 << 10)
        #expect(!progress.lastByteWritten)
    }

    @Test("body bytes without the head (never reported so) are not the whole request")
    func bodyWithoutHead() {
        var progress = RequestWriteProgress(bodyLength: 4)
        progress.bodyWritten(bytes: 4)
        #expect(!progress.lastByteWritten)
    }

    @Test("a body of unknown length (chunked) is whole only when the client says its end was written")
    func unknownLengthWaitsForTheEnd() {
        var progress = RequestWriteProgress(bodyLength: nil)
        progress.headWritten()
        progress.bodyWritten(bytes: 1 << 20)
        #expect(!progress.lastByteWritten)
        progress.endWritten()
        #expect(progress.lastByteWritten)
    }

    @Test("the failure's stage follows the progress")
    func stageFollowsProgress() {
        var progress = RequestWriteProgress(bodyLength: 3)
        progress.headWritten()
        progress.bodyWritten(bytes: 3)
        let failure = AsyncHTTPClientTransport.failure(CancellationError(), sent: progress.lastByteWritten)
        #expect(failure.stage == .sent)
    }
}
