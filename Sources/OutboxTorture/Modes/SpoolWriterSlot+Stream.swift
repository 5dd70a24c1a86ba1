import Foundation
import Outbox
import OutboxLogTesting

extension SpoolWriterSlot {
    /// One long `outbox enqueue --count N --batch B` run: several batches
    /// through one spool writer (`OutboxSpoolWriter`), each printed once it
    /// is durable, the process maybe killed after any printed line. Every
    /// printed entry must reach the server once, under its printed key,
    /// even when the run was killed before it handed its spool over; what
    /// was not printed may or may not arrive, but never twice
    /// (`SpoolTorture.checkStreams`).
    func stream(_ random: inout SplitMix64, into result: inout Result) async -> String? {
        let count = 100 + random.next(below: 500)
        let batch = 4 + random.next(below: 37)
        let tag = "spool-stream-\(seed)-\(cycle)-\(writer)"
        var arguments = [
            "enqueue", root.string, "--user", SpoolOwner.partition, "--type", "torture_message", "--endpoint",
            "POST /messages", "--payload", "{\"conversation\":\"stream-\(writer)\",\"text\":\"\(tag)\"}",
            "--count", "\(count)", "--batch", "\(batch)", "--json",
        ]
        if let keyFile { arguments += ["--key-file", keyFile] }
        var policy = ChildSupervisor.KillPolicy()
        policy.hangLimit = .seconds(60)
        if random.next(below: 2) == 0 {
            let line = random.next(below: max(1, count))
            let delay = UInt32(random.next(below: 20_000))
            policy.onLine = { _, number in number == line ? delay : nil }
        }
        let outcome: ChildSupervisor.Outcome
        do {
            outcome = try await ChildSupervisor.run(
                executable, arguments, errorFile: root.string + ".writer-\(writer).stderr", policy: policy)
        } catch {
            return "writer \(writer): cannot run outbox enqueue --count: \(error)"
        }
        if outcome.hung { return "writer \(writer): outbox enqueue --count \(count) --batch \(batch) hung" }
        let killed = outcome.killed && outcome.termination == .signaled(SIGKILL)
        if killed {
            result.kills += 1
        } else if outcome.termination != .exited(0) || outcome.lines.count != count {
            return "writer \(writer): outbox enqueue --count \(count) --batch \(batch) \(outcome.termination), "
                + "printed \(outcome.lines.count) lines, stderr: \(outcome.errorTail)"
        }
        var run = StreamRun(tag: tag, count: count, killed: killed, printed: [])
        defer { result.streams.append(run) }
        for (number, line) in outcome.lines.enumerated() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let id = object["id"] as? String, let key = object["idempotencyKey"] as? String,
                let path = object["path"] as? String
            else {
                // Only the line a kill cut short may be unreadable.
                if killed && number == outcome.lines.count - 1 { break }
                return "writer \(writer): outbox enqueue --count printed \(line)"
            }
            result.paths["stream \(path)", default: 0] += 1
            let entry = Acknowledged(tag: tag, id: id, key: key, path: path, sharesTag: true)
            result.acknowledged.append(entry)
            run.printed.append(entry)
        }
        return nil
    }
}
