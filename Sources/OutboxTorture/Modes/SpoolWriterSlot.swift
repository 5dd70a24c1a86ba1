import Foundation
import Outbox
import OutboxLogTesting
import SystemPackage

/// One writer of the spool mode: a series of real `outbox enqueue` processes
/// (an app extension, a widget, a CLI), one per entry, each killed now and
/// then. A killed enqueue is run again with the same id until one is
/// acknowledged — as an app retries its own write — so every entry of the
/// slot is acknowledged once the slot ends. Every other slot (the even
/// writers) ends with one long run of several batches (``stream(_:into:)``).
struct SpoolWriterSlot: Sendable {
    let writer: Int
    let count: Int
    let root: FilePath
    let seed: UInt64
    let cycle: Int
    let keyFile: String?
    let executable: String

    /// What one acknowledged entry told its writer.
    struct Acknowledged: Sendable {
        var tag: String
        var id: String
        var key: String
        var path: String
        /// Whether other entries carry the same tag (one long run's):
        /// such an entry is checked with its run (``StreamRun``).
        var sharesTag = false
    }

    /// One long run: what it was asked to write and what it printed.
    struct StreamRun: Sendable {
        var tag: String
        var count: Int
        var killed: Bool
        var printed: [Acknowledged]
    }

    struct Result: Sendable {
        var acknowledged: [Acknowledged] = []
        var kills = 0
        var paths: [String: Int] = [:]
        var streams: [StreamRun] = []
        /// A broken promise or an unexpected failure, if any.
        var violation: String?
    }

    static func tag(seed: UInt64, cycle: Int, writer: Int, index: Int) -> String { "spool-\(seed)-\(cycle)-\(writer)-\(index)" }

    func id(_ index: Int) -> String {
        var random = SplitMix64.derived(seed: seed, stream: 0x5350_4F4F_0000_0000 | UInt64(cycle) << 24 | UInt64(writer) << 16 | UInt64(index))
        return random.nextUUID().uuidString
    }

    func run(randomSeed: UInt64) async -> Result {
        var random = SplitMix64(seed: randomSeed)
        var result = Result()
        for index in 0..<count {
            let arguments = arguments(for: index, &random)
            if let violation = await enqueue(index, arguments, &random, into: &result) {
                result.violation = violation
                return result
            }
        }
        if writer % 2 == 0 { result.violation = await stream(&random, into: &result) }
        return result
    }

    /// The command line of `outbox enqueue` for entry `index`.
    func arguments(for index: Int, _ random: inout SplitMix64) -> [String] {
        let tag = Self.tag(seed: seed, cycle: cycle, writer: writer, index: index)
        let payload = "{\"conversation\":\"conversation-\(writer)\",\"text\":\"\(tag)\"}"
        var arguments = [
            "enqueue", root.string, "--user", SpoolOwner.partition, "--type", "torture_message", "--endpoint",
            "POST /messages", "--payload", payload, "--id", id(index), "--json",
        ]
        // Half the entries depend on the writer's previous one, which may
        // be in the queue or in a spool (of this writer or not) by now.
        if index > 0, random.next(below: 2) == 0 { arguments += ["--depends-on", id(index - 1)] }
        if index % 3 == 0 { arguments += ["--scope", "conversation-\(writer)"] }
        if let keyFile { arguments += ["--key-file", keyFile] }
        return arguments
    }

    /// Runs `outbox enqueue` of entry `index`, maybe killed (up to three
    /// times), until it is acknowledged; records it in `result`. Returns
    /// the violation, if any.
    func enqueue(_ index: Int, _ arguments: [String], _ random: inout SplitMix64, into result: inout Result) async -> String? {
        var lives = 0
        while true {
            lives += 1
            var policy = ChildSupervisor.KillPolicy()
            policy.hangLimit = .seconds(60)
            let killing = lives < 4 && random.next(below: 5) == 0
            if killing { policy.after = .microseconds(Int64(random.next(below: 60_000))) }
            let outcome: ChildSupervisor.Outcome
            do {
                outcome = try await ChildSupervisor.run(
                    executable, arguments, errorFile: root.string + ".writer-\(writer).stderr", policy: policy)
            } catch {
                return "writer \(writer): cannot run outbox enqueue: \(error)"
            }
            if outcome.hung { return "writer \(writer) entry \(index): outbox enqueue hung" }
            if case .signaled(let signal) = outcome.termination, signal == SIGKILL, outcome.killed {
                result.kills += 1
                continue
            }
            guard case .exited(0) = outcome.termination, let line = outcome.lines.last,
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let path = object["path"] as? String
            else {
                return "writer \(writer) entry \(index): outbox enqueue \(outcome.termination), "
                    + "printed \(outcome.lines), stderr: \(outcome.errorTail)"
            }
            record(index, key: object["idempotencyKey"] as? String, path: path, in: &result)
            return nil
        }
    }

    /// Records entry `index`, acknowledged through `path` with `key` (`nil`: a duplicate).
    func record(_ index: Int, key: String?, path: String, in result: inout Result) {
        let tag = Self.tag(seed: seed, cycle: cycle, writer: writer, index: index)
        result.paths[path, default: 0] += 1
        if let key {
            result.acknowledged.append(Acknowledged(tag: tag, id: id(index), key: key, path: path))
        } else {
            // A duplicate: an earlier, killed life recorded it already.
            result.paths["duplicate", default: 0] += 1
            result.acknowledged.append(
                Acknowledged(
                    tag: tag, id: id(index),
                    key: OutboxEntry.derivedIdempotencyKey(partition: SpoolOwner.partition, id: OutboxEntry.ID(id(index))!),
                    path: path))
        }
    }
}
