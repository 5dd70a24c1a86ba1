import Foundation
import Testing

@testable import Outbox

/// A dependent's reason is read back exactly as it was written: the whole
/// parent id and a known phrase, never a prefix of some other text.
@Suite("Dependency failure reasons")
struct DependencyFailureTests {
    static let parent = OutboxEntryID(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)

    @Test("every cause reads back as itself, naming its parent")
    func roundTrip() {
        let causes: [DependencyFailure] = [
            .quarantined(Self.parent), .evicted(Self.parent), .unknownToQueue(Self.parent), .removed(Self.parent),
            .discarded(Self.parent), .discardedServerWins(Self.parent), .gone(Self.parent),
        ]
        for cause in causes {
            #expect(DependencyFailure(reason: cause.reason) == cause, "\(cause.reason)")
            #expect(cause.reason.hasPrefix("dependencyFailed: \(Self.parent) "))
        }
        #expect(Set(causes.map(\.reason)).count == causes.count)
    }

    @Test("text that only starts like a cause is not one", arguments: [
        "dependencyFailed: 6F9619FF-8B86-D011-B42D-00C04FC964FF is quarantined, says the server",
        "dependencyFailed: 6F9619FF-8B86-D011-B42D-00C04FC964FF0 is quarantined",
        "dependencyFailed: local:6F9619FF-8B86-D011-B42D-00C04FC964FF is quarantined",
        "dependencyFailed: 6F9619FF-8B86-D011-B42D-00C04FC964FF",
        "dependencyFailed",
        "422 dependencyFailed: 6F9619FF-8B86-D011-B42D-00C04FC964FF is quarantined",
    ])
    func lookalikes(_ reason: String) {
        #expect(DependencyFailure(reason: reason) == nil)
    }
}
