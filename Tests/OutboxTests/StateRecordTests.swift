import Foundation
import Testing

@testable import Outbox

/// The state record keeps the time of an attempt of unknown outcome
/// (issue #21) without making other states unreadable to earlier builds.
@Suite("State record")
struct StateRecordTests {
    let metadata = EntryMetadata(
        id: OutboxEntryID(), sequence: 3, status: .waitingToRetry, priority: 0, attempts: 2, maxAttempts: 10, scope: 0, type: 0,
        coalescing: 0, when: 1_800_000_000_500, createdAt: 1_800_000_000_000, storedBytes: 0)

    @Test("without an unknown outcome the record stays version 1 (firstAnsweredAt trailing, as before); with one it is version 2")
    func versions() throws {
        let answered = FailureInfo(message: "HTTP 503", httpStatus: 503, firstAnsweredAt: 1_800_000_000_100)
        let v1 = EntryCodec.encodeState(metadata, failure: answered)
        #expect(v1.first == 1)
        #expect(try EntryCodec.decodeState(v1).failure == answered)

        for first in [nil, Int64(1_800_000_000_100)] {
            let unknown = FailureInfo(
                message: "interrupted: connection lost", httpStatus: nil, firstAnsweredAt: first,
                outcomeUnknownSince: 1_800_000_000_000)
            let v2 = EntryCodec.encodeState(metadata, failure: unknown)
            #expect(v2.first == 2)
            let decoded = try EntryCodec.decodeState(v2)
            #expect(decoded.failure == unknown)
            #expect(decoded.status == .waitingToRetry && decoded.attempts == 2 && decoded.when == metadata.when)
        }
        // Only the unknown outcome, no message: still kept.
        let bare = FailureInfo(outcomeUnknownSince: 1_800_000_000_000)
        #expect(try EntryCodec.decodeState(EntryCodec.encodeState(metadata, failure: bare)).failure == bare)
    }

    @Test("a cut version 2 record is corrupt, not misread")
    func truncated() {
        let v2 = EntryCodec.encodeState(metadata, failure: FailureInfo(outcomeUnknownSince: 1_800_000_000_000))
        #expect(throws: OutboxError.self) { try EntryCodec.decodeState(Array(v2.dropLast(3))) }
    }
}
