import Foundation
import Testing

@testable import Outbox

/// The state record (version 3) keeps each optional part of a failure —
/// when the server first answered, since when an attempt's outcome is
/// unknown, the dependency cause — behind a field mask, and reads back
/// exactly what was written; no other version is read.
@Suite("State record")
struct StateRecordTests {
    let metadata = EntryMetadata(
        id: OutboxEntryID(), sequence: 3, status: .waitingToRetry, priority: 0, attempts: 2, maxAttempts: 10, scope: 0, type: 0,
        coalescing: 0, when: 1_800_000_000_500, createdAt: 1_800_000_000_000, storedBytes: 0)

    @Test("every combination of the optional parts reads back as written, in version 3")
    func optionalParts() throws {
        let parent = OutboxEntryID()
        for first in [nil, Int64(1_800_000_000_100)] {
            for unknownSince in [nil, Int64(1_800_000_000_000)] {
                for dependency in [nil, DependencyFailure.gone(parent)] {
                    for message in [nil, "HTTP 503"] {
                        let failure = FailureInfo(
                            message: message, httpStatus: message == nil ? nil : 503, firstAnsweredAt: first,
                            outcomeUnknownSince: unknownSince, dependency: dependency)
                        let bytes = EntryCodec.encodeState(metadata, failure: failure)
                        #expect(bytes.first == 3)
                        let decoded = try EntryCodec.decodeState(bytes)
                        #expect(decoded.failure == (failure == FailureInfo() ? nil : failure))
                        #expect(decoded.status == .waitingToRetry && decoded.attempts == 2 && decoded.when == metadata.when)
                    }
                }
            }
        }
    }

    @Test("a cut record, or one of another version, is corrupt, not misread")
    func truncatedOrOtherVersion() {
        let bytes = EntryCodec.encodeState(metadata, failure: FailureInfo(outcomeUnknownSince: 1_800_000_000_000))
        #expect(throws: OutboxError.self) { try EntryCodec.decodeState(Array(bytes.dropLast(3))) }
        for version: UInt8 in [1, 2, 4] {
            var other = bytes
            other[0] = version
            #expect(throws: OutboxError.self, "version \(version)") { try EntryCodec.decodeState(other) }
        }
    }
}
