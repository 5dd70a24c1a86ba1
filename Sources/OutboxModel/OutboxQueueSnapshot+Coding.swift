import Foundation

extension OutboxQueueSnapshot {
    /// The snapshot as the JSON its file holds.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        // Every field is a number, a string or an array of them: encoding cannot fail.
        return (try? Array(encoder.encode(self))) ?? []
    }

    /// Reads a snapshot's JSON, refusing anything that is not one this code
    /// wrote: too large, not JSON of this shape, another version, counts
    /// below zero or more items than a snapshot keeps. The bytes are a
    /// file anyone could have written.
    public init(decoding bytes: some Collection<UInt8>) throws(OutboxError) {
        guard bytes.count <= Self.maximumEncodedSize else {
            throw OutboxError(.corruptEntry, "a queue snapshot of \(bytes.count) bytes, more than \(Self.maximumEncodedSize)")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        let snapshot: OutboxQueueSnapshot
        do {
            snapshot = try decoder.decode(OutboxQueueSnapshot.self, from: Data(bytes))
        } catch {
            throw OutboxError(.corruptEntry, "not a queue snapshot: \(Self.describe(error))")
        }
        guard snapshot.version == Self.currentVersion else {
            throw OutboxError(.corruptEntry, "a queue snapshot of version \(snapshot.version); this code reads \(Self.currentVersion)")
        }
        if let problem = snapshot.problem {
            throw OutboxError(.corruptEntry, "not a queue snapshot: \(problem)")
        }
        self = snapshot
    }

    /// The times a snapshot can hold.
    private static let plausible = Date(timeIntervalSince1970: 0)...Date(timeIntervalSince1970: 253_402_300_799)

    /// What makes the snapshot impossible, if anything.
    private var problem: String? {
        if counts.values.contains(where: { $0 < 0 }) { return "a count below zero" }
        if Set(counts.keys) != Set(OutboxStatus.allCases.map(\.rawValue)) { return "counts are not one per status" }
        if seconds.count > Self.secondsKept { return "\(seconds.count) seconds of activity, more than \(Self.secondsKept)" }
        if waiting.count > Self.waitingKept { return "\(waiting.count) waiting writes, more than \(Self.waitingKept)" }
        if failures.count > Self.causesKept { return "\(failures.count) failure causes, more than \(Self.causesKept)" }
        if attempts.count > Self.attemptsKept { return "\(attempts.count) attempts, more than \(Self.attemptsKept)" }
        if attempts.contains(where: { $0.attempt < 1 || $0.endedAt < $0.startedAt }) {
            return "an attempt numbered below 1 or ending before it started"
        }
        if attempts.contains(where: { ($0.detail?.count ?? 0) > Attempt.detailKept }) { return "an attempt's detail too long" }
        if seconds.contains(where: { $0.delivered < 0 || $0.failed < 0 }) { return "a second with a count below zero" }
        if failures.contains(where: { $0.count < 0 }) { return "a failure count below zero" }
        let times = [takenAt] + [oldestUnsentAt, stalledSince].compactMap { $0 } + seconds.map(\.at)
            + waiting.map(\.enqueuedAt) + failures.map(\.lastAt) + attempts.flatMap { [$0.startedAt, $0.endedAt] }
        if times.contains(where: { !Self.plausible.contains($0) }) { return "a time before 1970 or after 9999" }
        let latencies = [latencyP50, latencyP95].compactMap { $0 } + seconds.flatMap { [$0.latencyP50, $0.latencyP95].compactMap { $0 } }
        if latencies.contains(where: { !$0.isFinite || $0 < 0 }) { return "a latency below zero" }
        return nil
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty
                ? "not JSON of this shape" : "a bad \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\""
        default: "unreadable"
        }
    }
}
