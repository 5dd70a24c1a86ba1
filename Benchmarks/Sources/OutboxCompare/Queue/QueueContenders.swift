import Foundation
import OutboxBenchSupport
import OutboxLog
import OutboxQueue

/// The contenders of the queue rows: our `DurableQueue` and the peers, each
/// in a fresh directory per round, filled first for the consume row.
enum QueueContenders {
    /// Our queue with its default configuration.
    static func ours(_ name: String, _ workload: QueueWorkload) -> Contender {
        Contender(name: name, isOurs: true) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-queue")
            let queue = try await DurableQueue.open(at: directory.filePath.appending("queue"))
            if workload.prefill > 0 {
                var next = 0
                while next < workload.prefill {
                    let count = min(1_000, workload.prefill - next)
                    // The last batch waits for every element to reach the
                    // page cache: the row reads from there, not from a buffer.
                    let last = next + count == workload.prefill
                    try await queue.append(
                        contentsOf: (next..<next + count).map(workload.element), durability: last ? .written : .buffered)
                    next += count
                }
            }
            return Session(
                run: { seconds in try await OurQueueRound.run(queue, workload, seconds: seconds) },
                close: {
                    try await queue.close()
                    directory.remove()
                })
        }
    }

    /// A peer queue that `open` makes in the round's directory.
    static func peer(
        _ name: String, _ workload: QueueWorkload, open: @escaping @Sendable (TemporaryDirectory) throws -> any BlockingQueue
    ) -> Contender {
        Contender(name: name, isOurs: false) {
            let directory = try TemporaryDirectory(prefix: "outbox-compare-queue-peer")
            let queue = try await onDedicatedThread { () throws -> any BlockingQueue in
                let queue = try open(directory)
                if workload.prefill > 0 {
                    try queue.fill((0..<workload.prefill).map(workload.element))
                }
                return queue
            }
            return Session(
                run: { seconds in try await PeerQueueRound.run(queue, workload, seconds: seconds) },
                close: {
                    try await onDedicatedThread { try queue.close() }
                    directory.remove()
                })
        }
    }
}
