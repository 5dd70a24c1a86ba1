import Testing

@testable import OutboxTorture

@Suite("Worker line protocol")
struct WorkerLineTests {
    @Test("every line parses back to what was sent")
    func roundTrip() {
        let lines: [WorkerLine] = [
            .ready, .begin(3), .ack(17), .fail(4, code: "io", message: "sync failed (EIO)"), .poison(ok: true, detail: ""),
            .poison(ok: false, detail: "accepted"), .openFailed(code: "io", message: "cannot open"), .done,
            .enqueued(id: "5", key: "4F0A-KEY"), .drained, .explained(12),
        ]
        for line in lines { #expect(WorkerLine(parsing: line.text) == line) }
        #expect(WorkerLine(parsing: "ack x") == .unknown("ack x"))
        #expect(WorkerLine(parsing: "fail 1 io a\nb").text == "fail 1 io a b")
    }
}
