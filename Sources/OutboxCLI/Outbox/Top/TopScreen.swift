import Foundation
import Outbox

/// What `outbox top` shows for one snapshot, as lines of at most `width`
/// columns: the same text on a terminal (redrawn in place) and in a pipe
/// (one block per refresh).
struct TopScreen {
    var directory: String
    var user: String
    /// Where the snapshot came from, in a few words ("process 123, 0.4 s ago").
    var source: String
    var snapshot: OutboxQueueSnapshot
    var now: Date
    var width = 100

    func lines() -> [String] {
        var lines = [
            "outbox top  \(directory)  user \(user)  \(Self.clock(now))",
            "dispatcher \(snapshot.dispatcher.rawValue)  (\(source))" + stall,
            "",
            counts,
            summary,
            "delivered/s, last 60 s  " + sparkline(seconds: 60),
            "",
            "oldest waiting" + (snapshot.waiting.isEmpty ? ": none" : ""),
        ]
        for waiting in snapshot.waiting {
            lines.append("  \(waiting.id)  \(Self.pad(waiting.status.rawValue, 15))  \(waiting.why)")
        }
        lines.append("")
        lines.append("failures, last 5 min" + (snapshot.failures.isEmpty ? ": none" : ""))
        for failure in snapshot.failures {
            lines.append("  \(Self.pad(String(failure.count), 6)) \(Self.pad(failure.cause, 32)) last \(Self.clock(failure.lastAt))")
        }
        return lines.map { String($0.prefix(width)) }
    }

    private var stall: String {
        snapshot.stalledSince.map { "  STALLED since \(Self.clock($0))" } ?? ""
    }

    private var counts: String {
        OutboxStatus.allCases.map { "\($0.rawValue) \(snapshot.count($0))" }.joined(separator: "  ")
    }

    private var summary: String {
        let unsent = snapshot.count(.pending) + snapshot.count(.inFlight) + snapshot.count(.waitingToRetry)
        var text = "unsent \(unsent)"
        if let oldest = snapshot.oldestUnsentAt {
            text += " (oldest \(Self.age(snapshot.takenAt.timeIntervalSince(oldest))))"
        }
        text += "  drain \(String(format: "%.1f", snapshot.drainRate()))/s (10 s)"
        text += "  latency p50 \(Self.milliseconds(snapshot.latencyP50)) p95 \(Self.milliseconds(snapshot.latencyP95)) (60 s)"
        return text
    }

    /// One character per second, oldest first: how many were delivered
    /// relative to the busiest second shown.
    private func sparkline(seconds count: Int) -> String {
        let levels = Array(" ▁▂▃▄▅▆▇█")
        let last = Int64(snapshot.takenAt.timeIntervalSince1970.rounded(.down))
        var delivered = [Int](repeating: 0, count: count)
        for second in snapshot.seconds {
            let offset = Int(last - Int64(second.at.timeIntervalSince1970.rounded(.down)))
            if offset >= 0, offset < count { delivered[count - 1 - offset] = second.delivered }
        }
        let peak = delivered.max() ?? 0
        guard peak > 0 else { return "(none)" }
        let line = delivered.map { levels[$0 == 0 ? 0 : max(1, $0 * (levels.count - 1) / peak)] }
        return String(line) + "  peak \(peak)/s"
    }

    static func clock(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .current).time(includingFractionalSeconds: false))
    }

    static func age(_ seconds: TimeInterval) -> String {
        switch seconds {
        case ..<0: "0 s"
        case ..<120: "\(Int(seconds)) s"
        case ..<7200: "\(Int(seconds / 60)) min"
        default: "\(Int(seconds / 3600)) h"
        }
    }

    static func milliseconds(_ value: Double?) -> String {
        value.map { $0 < 10 ? String(format: "%.1f ms", $0) : "\(Int($0.rounded())) ms" } ?? "-"
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
