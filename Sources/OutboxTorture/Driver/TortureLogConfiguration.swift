import Logging
import OutboxLog

/// The log configuration every torture mode uses, worker and verifier
/// alike: tiny segments, so a short workload rolls many of them and
/// automatic compaction runs often; index checkpoints every 64 KiB (eight
/// segments), so kills, power losses, I/O faults and corruption meet them
/// at every stage, and opens that return before the index is loaded, as
/// the outbox store's do.
public enum TortureLogConfiguration {
    /// Small segments: a few dozen records each, so workloads roll often.
    public static let segmentSize = 8192

    /// How far ahead the writer zero-fills the active segment in the cycles
    /// that preallocate (``preallocates(cycle:)``): half a segment, so a
    /// short workload zero-fills often, cuts the zeros at every roll, and
    /// kills, power losses and I/O faults meet the zeros at every stage.
    public static let preallocation = segmentSize / 2

    /// Whether a cycle runs with preallocated segments: every other one, so
    /// the modes keep covering plain appends too.
    public static func preallocates(cycle: Int) -> Bool { cycle % 2 == 1 }

    /// Whether the simulated modes (powerloss, iofault) preallocate too, in
    /// the cycles ``preallocates(cycle:)`` picks. They do, with writes in
    /// place off (see ``make(fileSystem:recovery:deterministic:preallocated:)``):
    /// the writer zero-fills only after a work item in which *it* wrote
    /// records (`allocateAhead`), and with writes in place on, whether a
    /// `written` append is written by its caller or by the writer depends
    /// on timing — the record bytes are the same, whether zeros follow them
    /// is not, so a cycle would not replay (ScheduleReplayTests failed 3
    /// runs in 4). Writes in place beside preallocation are covered by the
    /// modes with real processes (kill, iofault's libfiu runs), which do not
    /// need to replay.
    static let simulatedModesPreallocate = true

    /// - Parameter preallocated: zero-fill the active segment ahead of its
    ///   records (``preallocation``).
    /// - Parameter deterministic: buffered appends wait for the next step
    ///   that writes (never for a size threshold reached on the writer's
    ///   own time), so the simulated modes make the same file-system calls
    ///   in the same order on every run; see ``OperationRunner/runSettled(_:on:)``.
    public static func make(
        fileSystem: any FileSystem = PosixFileSystem(), recovery: OutboxLog.Configuration.RecoveryMode = .strict,
        deterministic: Bool = false, preallocated: Bool = false
    ) -> OutboxLog.Configuration {
        var configuration = OutboxLog.Configuration()
        configuration.segmentSize = segmentSize
        configuration.automaticCompactionRatio = 0.5
        configuration.automaticCompactionMinimumBytes = 4 * segmentSize
        // Large values are up to 16 KiB: let them through tiny segments.
        configuration.maximumRecordSize = 64 << 10
        configuration.readerThreads = 1
        configuration.fileSystem = fileSystem
        configuration.recoveryMode = recovery
        configuration.preallocation = preallocated ? preallocation : 0
        configuration.logger = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        configuration.indexCheckpoints = true
        configuration.indexCheckpointInterval = 8 * segmentSize
        // The simulated modes replay a cycle's file-system calls exactly: an
        // index load or a periodic checkpoint running beside the workload
        // would interleave with it. They keep the checkpoints of close and
        // compaction, which run in step with the workload.
        configuration.opensBeforeIndexIsLoaded = !deterministic
        if deterministic {
            configuration.bufferedFlushThreshold = configuration.maximumPendingBytes
            configuration.indexCheckpointInterval = .max
            // Zero-filling follows the writer's own writes; who writes a
            // `written` append depends on timing (``simulatedModesPreallocate``).
            if preallocated { configuration.writesInPlace = false }
        }
        return configuration
    }
}
