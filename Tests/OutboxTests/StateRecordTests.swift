import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// The state record (version 4) keeps an entry's last failure as a cause
/// code with its status and message, and the times its failures left
/// (when the server first answered, since when an attempt's outcome is
/// unknown) behind a field mask; it reads back exactly what was written,
/// and no other version is read.
@Suite("State record")
struct StateRecordTests {
    let metadata = EntryMetadata(
        id: OutboxEntryID(), sequence: 3, status: .quarantined, priority: 0, attempts: 2, maxAttempts: 10, scope: 0, type: 0,
        coalescing: 0, when: 1_800_000_000_500, createdAt: 1_800_000_000_000, storedBytes: 0)

    static let parent = OutboxEntryID(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)

    /// Every cause a store writes, each dependency fate among them.
    static let causes: [OutboxFailure.Cause] = [
        .notSent, .interrupted, .leaseExpired, .inProgress, .unavailable, .transient, .handlerError, .attemptsUsedUp,
        .permanent, .expired, .payloadFileDamaged, .unresolvedReference, .conflict, .alreadyProcessed, .inProgressTooLong,
        .keyMayBeForgotten,
    ] + OutboxDependencyFailureTests.causes.map { .dependency($0) }

    @Test("every combination of the optional parts reads back as written, in version 4")
    func optionalParts() throws {
        let failures: [OutboxFailure?] = [
            nil, OutboxFailure(.unavailable, httpStatus: 503, message: "HTTP 503"), OutboxFailure(.dependency(.gone(Self.parent))),
        ]
        for first in [nil, Int64(1_800_000_000_100)] {
            for unknownSince in [nil, Int64(1_800_000_000_000)] {
                for last in failures {
                    let failure = FailureInfo(last: last, firstAnsweredAt: first, outcomeUnknownSince: unknownSince)
                    let bytes = EntryCodec.encodeState(metadata, failure: failure)
                    #expect(bytes.first == 4)
                    let decoded = try EntryCodec.decodeState(bytes)
                    #expect(decoded.failure == (failure.isEmpty ? nil : failure))
                    #expect(decoded.status == .quarantined && decoded.attempts == 2 && decoded.when == metadata.when)
                }
            }
        }
    }

    @Test("every cause has its own code and name and reads back as itself, with its status and message")
    func everyCause() throws {
        #expect(Set(Self.causes.map(\.code)).count == Self.causes.count - OutboxDependencyFailureTests.causes.count + 1)
        #expect(Set(Self.causes.map(\.name)).count == Set(Self.causes.map(\.code)).count)
        for cause in Self.causes {
            let failure = OutboxFailure(cause, httpStatus: 409, message: "why")
            let decoded = try EntryCodec.decodeState(EntryCodec.encodeState(metadata, failure: FailureInfo(last: failure)))
            #expect(decoded.failure?.last == failure, "\(cause)")
        }
    }

    @Test("a cause code no store writes is corruption, never a guess")
    func unknownCause() throws {
        let bytes = EntryCodec.encodeState(metadata, failure: FailureInfo(last: OutboxFailure(.transient)))
        let causeOffset = 1 + 1 + 2 + 8 + 1  // version, status, attempts, when, fields
        #expect(bytes[causeOffset] == OutboxFailure.Cause.transient.code)
        for code: UInt8 in [0, 18, 255] {
            var damaged = bytes
            damaged[causeOffset] = code
            #expect(throws: OutboxError.self, "cause \(code)") { try EntryCodec.decodeState(damaged) }
        }
        // Code 13 (a dependency) without its parent and fate runs past the record.
        var dependency = bytes
        dependency[causeOffset] = 13
        #expect(throws: OutboxError.self) { try EntryCodec.decodeState(dependency) }
    }

    @Test("a cut record, or one of another version, is corrupt, not misread")
    func truncatedOrOtherVersion() {
        let bytes = EntryCodec.encodeState(metadata, failure: FailureInfo(outcomeUnknownSince: 1_800_000_000_000))
        #expect(throws: OutboxError.self) { try EntryCodec.decodeState(Array(bytes.dropLast(3))) }
        for version: UInt8 in [1, 2, 3, 5] {
            var other = bytes
            other[0] = version
            #expect(throws: OutboxError.self, "version \(version)") { try EntryCodec.decodeState(other) }
        }
    }
}
