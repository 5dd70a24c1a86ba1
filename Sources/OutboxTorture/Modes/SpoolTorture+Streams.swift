import Outbox
import OutboxReferenceServer

extension SpoolTorture {
    /// The long runs: each printed entry once, under the key derived from its
    /// id, applied exactly once; the server saw no other key for the run's
    /// payload than the printed ones, apart from at most the entries a killed
    /// run wrote without printing them.
    static func checkStreams(_ runs: [SpoolWriterSlot.StreamRun], server: ReferenceServer) throws(CycleViolation) {
        let ledger = server.ledger
        let attempts = server.attempts
        for run in runs {
            var printedKeys = Set<String>()
            var printedIDs = Set<String>()
            for entry in run.printed {
                guard printedIDs.insert(entry.id).inserted, printedKeys.insert(entry.key).inserted else {
                    throw CycleViolation("\(run.tag): entry \(entry.id) (key \(entry.key)) was printed twice")
                }
                guard let id = OutboxEntry.ID(entry.id),
                    entry.key == OutboxEntry.derivedIdempotencyKey(partition: SpoolOwner.partition, id: id)
                else {
                    throw CycleViolation("\(run.tag): entry \(entry.id) was printed with key \(entry.key), not its own")
                }
                guard ledger.applied[entry.key] == 1 else {
                    throw CycleViolation(
                        "\(run.tag): entry \(entry.id) (\(entry.path)) was acknowledged and applied "
                            + "\(ledger.applied[entry.key] ?? 0) times")
                }
            }
            let seen = Set(attempts.keys(forRequestsContaining: "\"text\":\"\(run.tag)\"").keys)
            let unprinted = seen.subtracting(printedKeys)
            let allowed = run.killed ? run.count - run.printed.count : 0
            guard unprinted.count <= allowed else {
                throw CycleViolation(
                    "\(run.tag): the server saw \(unprinted.count) keys that were never printed "
                        + "(\(run.killed ? "killed" : "not killed") after \(run.printed.count) of \(run.count))")
            }
        }
    }
}
