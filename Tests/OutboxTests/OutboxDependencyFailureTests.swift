import Foundation
import Testing

@testable import Outbox

/// A dependency failure is kept as a code and the parent's id: every cause
/// reads back from a state record as itself, and a code no store writes is
/// corruption, never a guess.
@Suite("Dependency failure codes")
struct DependencyFailureTests {
    static let parent = OutboxEntryID(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)
    static let causes: [DependencyFailure] = [
        .quarantined(parent), .evicted(parent), .unknownToQueue(parent), .removed(parent),
        .discarded(parent), .gone(parent),
    ]

    static func metadata(_ status: OutboxStatus) -> EntryMetadata {
        EntryMetadata(
            id: OutboxEntryID(), sequence: 1, status: status, priority: 0, attempts: 0, maxAttempts: 10, scope: 0,
            type: 0, coalescing: 0, when: 0, createdAt: 0, storedBytes: 0)
    }

    @Test("every cause has its own code and reason, names its parent, and reads back from a state record as itself")
    func roundTrip() throws {
        #expect(Set(Self.causes.map(\.code)).count == Self.causes.count)
        #expect(Set(Self.causes.map(\.reason)).count == Self.causes.count)
        for cause in Self.causes {
            #expect(DependencyFailure(code: cause.code, parent: Self.parent) == cause)
            #expect(cause.reason.hasPrefix("dependencyFailed: \(Self.parent) "))
            let bytes = EntryCodec.encodeState(Self.metadata(.quarantined), failure: FailureInfo(dependency: cause))
            let state = try EntryCodec.decodeState(bytes)
            #expect(state.failure?.dependency == cause)
            #expect(state.failure?.message == cause.reason)
        }
    }

    @Test("a code no store writes, or a state field no store sets, is corruption")
    func unknownCodes() throws {
        for code: UInt8 in [0, 7, 255] { #expect(DependencyFailure(code: code, parent: Self.parent) == nil) }
        let bytes = EntryCodec.encodeState(Self.metadata(.quarantined), failure: FailureInfo(dependency: .evicted(Self.parent)))
        var unknownCode = bytes
        unknownCode[bytes.count - 17] = 8  // the cause's code, before the 16-byte parent id
        var unknownField = bytes
        unknownField[bytes.count - 18] |= 8  // the field mask, before the code
        for damaged in [unknownCode, unknownField, Array(bytes.dropLast())] {
            #expect(throws: OutboxError.self) { try EntryCodec.decodeState(damaged) }
        }
    }

    @Test("a text that reads like a dependency failure is only a message: no cause is read from it")
    func textIsNotACause() throws {
        let message = DependencyFailure.quarantined(Self.parent).reason
        let bytes = EntryCodec.encodeState(Self.metadata(.quarantined), failure: FailureInfo(message: message))
        let failure = try #require(try EntryCodec.decodeState(bytes).failure)
        #expect(failure.message == message)
        #expect(failure.dependency == nil)
    }
}
