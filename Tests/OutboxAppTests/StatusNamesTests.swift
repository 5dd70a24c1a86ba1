import Foundation
import Outbox
import Testing

/// Each status has one name, the one an app developer reads
/// (`waitingToRetry`, `quarantined`), in code, JSON and the CLI; any other
/// name is refused, never read as a status.
@Suite("Status names")
struct StatusNamesTests {
    @Test("JSON encodes each status by its name and decodes only those names")
    func json() throws {
        let encoded = try JSONEncoder().encode([OutboxStatus.waitingToRetry, .quarantined])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["waitingToRetry","quarantined"]"#)
        for status in OutboxStatus.allCases {
            #expect(try JSONDecoder().decode(OutboxStatus.self, from: JSONEncoder().encode(status)) == status)
        }
        for other in [#""gone""#, #""failed""#, #""dead""#, #""Pending""#] {
            #expect(throws: DecodingError.self, "\(other)") {
                try JSONDecoder().decode(OutboxStatus.self, from: Data(other.utf8))
            }
        }
    }

    @Test("init(name:) takes any case of a status's name, and nothing else")
    func names() {
        #expect(OutboxStatus(name: "WaitingToRetry") == .waitingToRetry)
        #expect(OutboxStatus(name: "QUARANTINED") == .quarantined)
        #expect(OutboxStatus(name: "inflight") == .inFlight)
        for other in ["", "failed", "dead", "deadish", "waiting to retry"] { #expect(OutboxStatus(name: other) == nil) }
        for status in OutboxStatus.allCases { #expect(OutboxStatus(name: status.rawValue) == status) }
    }

    @Test("an entry quarantined by a permanent answer reports .quarantined")
    func quarantinedEntry() async throws {
        let store = InMemoryOutboxStore()
        let id = try await store.enqueue(OutboxEnqueueRequest(type: "post", method: "POST", endpoint: "/posts")).id
        _ = try await store.beginAttempt(id, at: Date(), lease: .seconds(60))
        _ = try await store.quarantine(id, OutboxFailure(.permanent, httpStatus: 404, message: "HTTP 404"))
        #expect(try #require(try await store.entry(id)).status == .quarantined)
    }
}
