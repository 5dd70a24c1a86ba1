import Foundation
import Outbox
import OutboxReferenceServer

/// The demo's ledger: what the app recorded, what the server applied, and
/// every way the two could disagree.
struct DemoReport: Encodable {
    struct Quarantined: Encodable {
        var id: String
        var type: String
        var reason: String
        /// Why it waits, as `outbox explain` says it.
        var why: String
    }

    var enqueued: Int
    var coalesced: Int
    var expectedDeliveries: Int
    var delivered: Int
    /// Deliveries before the app was killed; `nil` if the demo stopped
    /// before it got that far.
    var deliveredBeforeRestart: Int?
    var appliedExactlyOnce: Int
    var appliedTwice: [String]
    var lost: [String]
    var duplicateAttemptsAbsorbed: Int
    var retries: Int
    /// Attempts sent whose answer was lost (dropped, reset, half-open):
    /// resent promptly with the same key, not counted as failures.
    var interrupted: Int
    var remappedIDs: Int
    var quarantined: [Quarantined]
    var remaining: Int
    var faults: [String: Int]
    var elapsedSeconds: Double
    var throughputPerSecond: Double
    /// Deliveries the app ran at once.
    var concurrency: Int
    /// How long the server took to answer each request.
    var latencyMilliseconds: Double
    /// Why the demo stopped before the queue drained (a store or dispatcher
    /// error, or the deadline); `nil` if it ran to the end.
    var failure: String?
    var violations: [String]

    init(
        recorded: DemoScenario.Recorded, tally: Tally.Counts, ledger: ReferenceLedger, remaining: Int,
        quarantined: [(entry: OutboxEntry, why: String)], elapsed: Duration, deliveredBeforeRestart: Int?,
        failure: String? = nil, unexplained: String? = nil, concurrency: Int, latency: Duration
    ) {
        self.concurrency = concurrency
        latencyMilliseconds = Self.milliseconds(latency)
        let deliverable = recorded.deliverable
        self.failure = failure
        enqueued = deliverable.count + recorded.rejected.count + recorded.coalesced
        coalesced = recorded.coalesced
        expectedDeliveries = deliverable.count
        delivered = tally.delivered
        self.deliveredBeforeRestart = deliveredBeforeRestart
        let keys = deliverable.compactMap { recorded.keys[$0] }
        appliedExactlyOnce = keys.filter { ledger.applied[$0] == 1 }.count
        appliedTwice = ledger.appliedTwice
        // Unfinished, an unapplied write is not lost: it is still queued.
        lost = failure != nil ? [] : deliverable.filter { recorded.keys[$0].map { ledger.applied[$0] == nil } ?? true }.map(\.description)
        duplicateAttemptsAbsorbed = ledger.replays + ledger.inProgress
        retries = tally.waitingToRetry
        interrupted = tally.interrupted
        remappedIDs = tally.remapped
        self.quarantined = quarantined.map {
            Quarantined(id: $0.entry.id.description, type: $0.entry.type, reason: $0.entry.lastFailure?.description ?? "", why: $0.why)
        }
        self.remaining = remaining
        faults = ledger.faults
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        elapsedSeconds = (seconds * 1000).rounded() / 1000
        let done = failure == nil ? deliverable.count : tally.delivered
        throughputPerSecond = seconds > 0 ? (Double(done) / seconds * 10).rounded() / 10 : 0

        var violations: [String] = []
        if let failure { violations.append("did not finish: \(failure)") }
        if !lost.isEmpty { violations.append("\(lost.count) write(s) never reached the server") }
        if !appliedTwice.isEmpty { violations.append("\(appliedTwice.count) write(s) applied more than once") }
        if ledger.appliedWithoutKey > 0 { violations.append("\(ledger.appliedWithoutKey) write(s) arrived without an idempotency key") }
        if remaining > 0 && failure == nil { violations.append("\(remaining) write(s) still unsent") }
        if let unexplained { violations.append("a write left in the queue is not explained by its state: \(unexplained)") }
        self.violations = violations
        // The rest compares a finished day with the server: skip it when unfinished.
        guard failure == nil else { return }
        let rejectedKeys = Set(recorded.rejected.compactMap { recorded.keys[$0] })
        if rejectedKeys.contains(where: { ledger.applied[$0] != nil }) { violations.append("a rejected write was applied") }
        let quarantinedIDs = Set(quarantined.map(\.entry.id))
        if Set(recorded.rejected) != quarantinedIDs {
            violations.append("quarantined \(quarantinedIDs.count) entries, expected exactly the \(recorded.rejected.count) rejected ones")
        }
        if ledger.photos != recorded.photos.count {
            violations.append("the server stored \(ledger.photos) photos, expected \(recorded.photos.count) (a local: id reached it?)")
        }
        if ledger.likes != recorded.likes { violations.append("like states differ from the last toggle of each post") }
        if ledger.likeWrites != recorded.likeEntries.count {
            violations.append("\(ledger.likeWrites) like writes applied, expected \(recorded.likeEntries.count) after coalescing")
        }
        self.violations = violations
    }

    var text: String {
        var lines = [
            "",
            "ledger",
            "  enqueued                        \(enqueued) (\(coalesced) like toggles coalesced away)",
            "  delivered                       \(delivered) of \(expectedDeliveries) "
                + (deliveredBeforeRestart.map { "(\($0) before the app was killed)" } ?? "(stopped before the app was killed)"),
            "  applied exactly once (server)   \(appliedExactlyOnce) of \(expectedDeliveries)",
            "  applied twice                   \(appliedTwice.count)",
            "  lost                            \(lost.count)",
            "  duplicates absorbed by keys     \(duplicateAttemptsAbsorbed)",
            "  retries                         \(retries)",
            "  interrupted (answer lost)       \(interrupted)",
            "  remapped local: ids             \(remappedIDs)",
            "  faults injected                 " + faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
            "  quarantined                     \(quarantined.count)",
        ]
        for entry in quarantined { lines.append("    \(entry.type) \(entry.id.prefix(8)): \(entry.why)") }
        lines += [
            "  remaining                       \(remaining)" + (failure != nil && remaining > 0 ? " (still queued when the demo stopped)" : ""),
            "  elapsed                         \(elapsedSeconds) s (\(throughputPerSecond) writes/s under faults, "
                + "\(concurrency) at once, answers taking \(latencyMilliseconds) ms)",
            "",
            violations.isEmpty ? "OK: every write arrived exactly once." : "FAILED: " + violations.joined(separator: "; "),
        ]
        return lines.joined(separator: "\n")
    }

    /// `duration` in milliseconds, to the microsecond.
    static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return ((Double(seconds) * 1000 + Double(attoseconds) / 1e15) * 1000).rounded() / 1000
    }
}
