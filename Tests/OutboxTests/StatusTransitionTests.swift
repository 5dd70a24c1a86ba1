import Outbox
import Testing

/// The lifecycle's transition table, spelled out: `allowedTransitions` is
/// derived from the switch every outcome consults, so a wrong arm there
/// shows up here as a changed table.
@Suite struct StatusTransitionTests {
    @Test func theTableIsTheDocumentedLifecycle() {
        let expected: [OutboxStatus: Set<OutboxStatus>] = [
            .pending: [.inFlight, .quarantined],
            .waitingToRetry: [.inFlight, .quarantined],
            .inFlight: [.succeeded, .waitingToRetry, .quarantined, .conflict, .pending],
            .quarantined: [.pending],
            .conflict: [.pending, .quarantined, .succeeded],
            .succeeded: [],
        ]
        for status in OutboxStatus.allCases {
            #expect(status.allowedTransitions == expected[status], "from \(status)")
        }
    }
}
