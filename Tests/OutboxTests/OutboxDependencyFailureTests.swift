import Foundation
import Testing

@testable import Outbox
@testable import OutboxModel
@testable import OutboxStorage

/// A dependency failure is kept as a cause code, its fate's code and the parent's id: every cause
/// reads back from a state record as itself, and a code no store writes is
/// corruption, never a guess.
@Suite("Dependency failure codes")
struct OutboxDependencyFailureTests {
    static let parent = OutboxEntryID(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)
    static let causes: [OutboxDependencyFailure] = [
        .quarantined(parent), .evicted(parent), .unknownToQueue(parent), .removed(parent),
        .discarded(parent), .gone(parent),
    ]

    static func metadata(_ status: OutboxStatus) -> EntryMetadata {
        EntryMetadata(
            id: OutboxEntryID(), sequence: 1, status: status, priority: 0, attempts: 0, maxAttempts: 10, scope: 0,
            type: 0, coalescing: 0, when: 0, createdAt: 0, storedBytes: 0)
    }

    @Test("every fate has its own code, name and description, names its parent, and reads back from a state record as itself")
    func roundTrip() throws {
        #expect(Set(Self.causes.map(\.code)).count == Self.causes.count)
        #expect(Set(Self.causes.map(\.name)).count == Self.causes.count)
        #expect(Set(Self.causes.map(\.description)).count == Self.causes.count)
        for cause in Self.causes {
            #expect(OutboxDependencyFailure(code: cause.code, parent: Self.parent) == cause)
            #expect(cause.description.hasPrefix("dependency \(Self.parent) "))
            let bytes = EntryCodec.encodeState(Self.metadata(.quarantined), failure: FailureInfo(dependency: cause))
            let state = try EntryCodec.decodeState(bytes)
            #expect(state.failure?.dependency == cause)
            #expect(state.failure?.last == OutboxFailure(.dependency(cause)))
        }
    }

    @Test("a code no store writes, or a state field no store sets, is corruption")
    func unknownCodes() throws {
        for code: UInt8 in [0, 7, 255] { #expect(OutboxDependencyFailure(code: code, parent: Self.parent) == nil) }
        let bytes = EntryCodec.encodeState(Self.metadata(.quarantined), failure: FailureInfo(dependency: .evicted(Self.parent)))
        var unknownCode = bytes
        // The record ends: fate, 16-byte parent id, i32 status (−1), no message.
        unknownCode[bytes.count - 22] = 7
        var unknownField = bytes
        unknownField[bytes.count - 24] |= 8  // the field mask, before the cause's code
        for damaged in [unknownCode, unknownField, Array(bytes.dropLast())] {
            #expect(throws: OutboxError.self) { try EntryCodec.decodeState(damaged) }
        }
    }

    @Test("a text that reads like a dependency failure is only a message: no cause is read from it")
    func textIsNotACause() throws {
        let message = OutboxFailure(.dependency(.quarantined(Self.parent))).description
        let bytes = EntryCodec.encodeState(
            Self.metadata(.quarantined), failure: FailureInfo(last: OutboxFailure(.permanent, message: message)))
        let failure = try #require(try EntryCodec.decodeState(bytes).failure)
        #expect(failure.last == OutboxFailure(.permanent, message: message))
        #expect(failure.dependency == nil)
    }
}
