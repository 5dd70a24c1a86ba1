/// The torture modes: each attacks the engine's promise from a different side.
public enum TortureMode: String, Sendable, Codable, CodingKeyRepresentable, CaseIterable, CustomStringConvertible {
    /// `kill -9` of a real worker process (the `outbox` binary) at random
    /// moments, on a real directory; several cycles on the same log.
    case kill
    /// Simulated power loss through the simulated file system, in every
    /// ``OutboxLogTesting/PowerLossMode``.
    case powerloss
    /// EIO/ENOSPC on the Nth write, sync, rename, directory sync, create or
    /// truncate (simulated), also during recovery; and real-syscall faults
    /// under libfiu when `fiu-run` is installed.
    case iofault
    /// Bit flips, truncations, zeroed pages, garbage, deleted, duplicated
    /// and foreign segment files, on copies of real logs.
    case corrupt
    /// `kill -9` of an app process draining its outbox to a real loopback
    /// server that counts side effects per idempotency key.
    case outbox
    /// Power loss and failed syncs (simulated) under an app whose dispatcher
    /// is draining to the loopback server: nothing the app was told failed
    /// is ever sent, nothing acknowledged is lost or applied twice.
    case outboxfault
    /// One opener at a time: a log held by this process is attacked by
    /// more opens (and `destroy`) in this process, then by another process.
    case lock
    /// Two to four writer processes (`outbox enqueue`) write into a queue
    /// that an owner process holds and drains to the loopback server —
    /// through spools while it runs, directly while it is down — with
    /// `kill -9` of any of them: every acknowledged enqueue is applied
    /// exactly once, and no spool is left.
    case spool
    /// Large bodies in payload files: an app uploading photos killed at
    /// every step of writing and deleting a file, and damaged files
    /// (flipped, cut, grown, deleted, swapped, renamed) reopened and drained.
    case payload
    /// Two producers, two named consumers and a trimmer on one durable
    /// queue (`OutboxQueue`), `kill -9`ed at random: every acknowledged
    /// element reaches every consumer at least once, in order; nothing is
    /// invented; commits never go back; a trim never removes what a
    /// consumer has not read.
    case queue

    public var description: String { rawValue }

    /// How `--mode all` shares its time among the modes: the kill loop and
    /// corruption get the most (the long profile's bar counts their cycles:
    /// 1,000 kills and 10,000 corruption cases in ten minutes).
    var shareOfAll: Double {
        switch self {
        case .kill: 0.32
        case .powerloss: 0.10
        case .iofault: 0.10
        case .corrupt: 0.38
        case .outbox: 0.10
        case .outboxfault: 0.10
        case .lock: 0.05
        case .spool: 0.10
        case .payload: 0.08
        case .queue: 0.08
        }
    }
}
