import Foundation
import Outbox
import Testing

/// Issue 17, item 7: the statuses read as an app developer expects
/// (`waitingToRetry`, `quarantined`), and code and JSON written with the
/// earlier names (`failed`, `dead`) keep working.
@Suite("Status names")
struct StatusNamesTests {
    @Test("the earlier names are the new statuses, not other ones")
    func formerNamesAlias() {
        let (failed, dead) = Self.formerNames()
        #expect(failed == .waitingToRetry)
        #expect(dead == .quarantined)
        #expect(failed.isSendable)
        #expect(!dead.isSendable)
    }

    @Test("JSON encodes the new names and decodes the earlier ones too")
    func json() throws {
        let encoded = try JSONEncoder().encode([OutboxStatus.waitingToRetry, .quarantined])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["waitingToRetry","quarantined"]"#)
        let decoded = try JSONDecoder().decode([OutboxStatus].self, from: Data(#"["failed","dead","pending"]"#.utf8))
        #expect(decoded == [.waitingToRetry, .quarantined, .pending])
        for status in OutboxStatus.allCases {
            #expect(try JSONDecoder().decode(OutboxStatus.self, from: JSONEncoder().encode(status)) == status)
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(OutboxStatus.self, from: Data(#""gone""#.utf8))
        }
    }

    @Test("init(name:) takes any case of a name, the earlier names, and nothing else")
    func names() {
        #expect(OutboxStatus(name: "WaitingToRetry") == .waitingToRetry)
        #expect(OutboxStatus(name: "QUARANTINED") == .quarantined)
        #expect(OutboxStatus(name: "Failed") == .waitingToRetry)
        #expect(OutboxStatus(name: "dead") == .quarantined)
        #expect(OutboxStatus(name: "inflight") == .inFlight)
        #expect(OutboxStatus(name: "") == nil)
        #expect(OutboxStatus(name: "deadish") == nil)
        for status in OutboxStatus.allCases { #expect(OutboxStatus(name: status.rawValue) == status) }
    }

    @Test("an entry quarantined by a permanent answer reports .quarantined, and the earlier name matches it")
    func quarantinedEntry() async throws {
        let store = InMemoryOutboxStore()
        let id = try await store.enqueue(OutboxEnqueueRequest(type: "post", method: "POST", endpoint: "/posts")).id
        _ = try await store.beginAttempt(id, at: Date(), lease: .seconds(60))
        _ = try await store.quarantine(id, reason: "HTTP 404", httpStatus: 404)
        let status = try #require(try await store.entry(id)).status
        #expect(status == .quarantined)
        #expect(status == Self.formerNames().dead)
    }

    /// The earlier names, read through a protocol whose requirements they
    /// witness: the same declarations an app's `.failed` and `.dead` reach,
    /// without a deprecation warning in this test.
    private static func formerNames() -> (failed: OutboxStatus, dead: OutboxStatus) {
        let named: any FormerStatusNames.Type = OutboxStatus.self
        return (named.failed, named.dead)
    }
}

private protocol FormerStatusNames {
    static var failed: OutboxStatus { get }
    static var dead: OutboxStatus { get }
}

extension OutboxStatus: FormerStatusNames {}
