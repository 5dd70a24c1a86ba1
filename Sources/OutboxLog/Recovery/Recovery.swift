import Logging
import SystemPackage

/// What recovery hands to the engine.
struct RecoveredLog {
    /// Every segment, sorted by base sequence.
    var segments: [SegmentFile]
    var index: LogIndex
    var nextSequence: UInt64
    /// The newest segment, if appends continue in it; `nil` means the first
    /// append starts a new segment.
    var active: SegmentFile?
    /// The active segment's size.
    var activeSize: Int64
    var nextSegmentID: UInt32
    /// Whether the log ends with a marker vouching for every record (a
    /// clean close), so the open need not write one.
    var endsWithMarker: Bool
    /// Read-only opens leave damage in place: where each damaged segment's
    /// readable bytes end (a torn tail), and which segments hold damage that
    /// scans must step over (read-only salvage).
    var readableEnds: [UInt32: Int64] = [:]
    var segmentsWithKnownDamage: Set<UInt32> = []
    var report: RecoveryReport
    /// With an index checkpoint: the index is still to be loaded (``index``
    /// is empty until then).
    var deferredLoad: DeferredIndexLoad? = nil
    /// Keys of the records after ``Recovery/changesAfter``, if the log still
    /// holds that history (full recovery; a deferred load collects them
    /// itself).
    var changedKeys: Set<LogKey>? = nil
}

/// Opens a log directory: verifies every segment, finishes or rolls back an
/// interrupted compaction, cuts a torn tail, salvages if asked, and rebuilds
/// the index. One pass is five steps, in this order:
///
/// 1. ``SegmentInventory``: list the directory and read every header (an
///    unknown format version fails *before* anything is modified);
/// 2. ``IntentResolution``: finish or roll back an interrupted compaction;
/// 3. ``SegmentChain``: scan every record in sequence order, rebuild the
///    index, and classify damage;
/// 4. in strict mode, fail on any damage but a torn tail (nothing has been
///    modified but step 2's swap); in salvage mode, ``Salvage`` rewrites
///    each damaged segment with its intact records and fills gaps, then the
///    pass starts again on the repaired directory;
/// 5. ``TailRepair``: cut the torn tail, make the newest segment durable,
///    and choose where appends continue.
///
/// Recovery never overwrites a record in place: repairs go to new files
/// that are swapped in (steps 2, 4, 5), or bytes are cut (step 5).
struct Recovery {
    let layout: DirectoryLayout
    let configuration: OutboxLog.Configuration
    /// A client's checkpoint position: collect the keys of the records after
    /// it, if the log still holds that history (``RecoveredLog/changedKeys``).
    var changesAfter: LogPosition? = nil
    var fileSystem: any FileSystem { configuration.fileSystem }
    var logger: Logger { configuration.logger }

    /// How many times salvage may fill gaps and scan again.
    static let maximumGapPasses = 3

    func run() throws(OutboxLogError) -> RecoveredLog {
        let clock = ContinuousClock()
        let start = clock.now
        var report = RecoveryReport(directory: layout.directory.string)
        report.readOnly = configuration.readOnly
        var salvagePasses = 0
        // Only a strict, writable open trusts a checkpoint: verify and salvage read everything.
        var mayUseCheckpoint =
            configuration.indexCheckpoints && !configuration.readOnly && configuration.recoveryMode == .strict
        while true {
            switch try pass(salvagePasses: salvagePasses, mayUseCheckpoint: mayUseCheckpoint, report: &report) {
            case .recovered(var recovered):
                recovered.report.duration = clock.now - start
                return recovered
            case .salvaged:
                // Salvage changed the directory: scan it again from the start.
                salvagePasses += 1
            case .withoutCheckpoint:
                mayUseCheckpoint = false
            }
            report.restartCounts()
        }
    }

    private enum PassOutcome {
        case recovered(RecoveredLog)
        /// Salvage repaired the directory: scan it again.
        case salvaged
        /// The checkpoint turned out unusable after a repair: scan it all.
        case withoutCheckpoint
    }

    /// One pass over the directory.
    private func pass(
        salvagePasses: Int, mayUseCheckpoint: Bool, report: inout RecoveryReport
    ) throws(OutboxLogError) -> PassOutcome {
        // 1. What is there.
        let inventory = try SegmentInventory(layout: layout, fileSystem: fileSystem, logger: logger)
        defer { inventory.close() }

        // 2. The effective segments, once an interrupted swap is settled.
        let ordered = try IntentResolution(
            layout: layout, fileSystem: fileSystem, readOnly: configuration.readOnly,
            reportsDamagedIntent: configuration.readOnly && configuration.recoveryMode == .salvage
        ).resolve(inventory, report: &report)

        // 3 and 5 for the newest segment only, if a checkpoint covers the rest.
        if mayUseCheckpoint {
            switch try CheckpointedRecovery(layout: layout, configuration: configuration).run(
                inventory: inventory, ordered: ordered, report: &report)
            {
            case .recovered(let recovered): return .recovered(recovered)
            case .recoverAgain: return .withoutCheckpoint
            case .unusable: break
            }
        }

        // 3. Every record.
        let salvaged = salvagePasses > 0
        var chain = SegmentChain(
            layout: layout, configuration: configuration,
            toleratesGaps: salvaged || configuration.recoveryMode == .salvage,
            mayFillGaps: salvagePasses < Self.maximumGapPasses)
        chain.changedKeysAfter = changesAfter?.sequence
        var scan = try chain.scan(ordered, inventory: inventory, report: &report)

        // 4. Damage other than a torn tail.
        let salvage = Salvage(layout: layout, fileSystem: fileSystem, logger: logger)
        if !scan.gaps.isEmpty && scan.damaged.isEmpty && !configuration.readOnly {
            try salvage.run(
                [], gaps: scan.gaps, ordered: ordered, highestSequence: scan.highestSequence, report: &report)
            return .salvaged
        }
        if let first = scan.damaged.first {
            if configuration.recoveryMode == .strict || salvaged {
                throw OutboxLogError(
                    .corruption,
                    "\(first.damage)" + (scan.damaged.count > 1 ? " (and \(scan.damaged.count - 1) more damaged segment(s))" : "")
                        + "; open with recovery mode salvage to keep every intact record",
                    file: first.candidate.path, offset: first.offset, damage: first.damage)
            }
            if configuration.readOnly {
                for segment in scan.damaged {
                    report.skipped += segment.analysis?.damage?.skipped
                        ?? [.init(file: segment.name, offset: segment.offset, bytes: segment.candidate.size - segment.offset, damage: segment.damage)]
                }
            } else {
                try salvage.run(
                    scan.damaged, gaps: scan.gaps, ordered: ordered, highestSequence: scan.highestSequence,
                    report: &report)
                return .salvaged
            }
        }

        // 5. The newest segment.
        let tail = try TailRepair(layout: layout, configuration: configuration).run(&scan, report: &report)

        // Sequence numbers continue above every one the log holds, and never
        // below the newest segment's base: the floor (Docs/FORMAT.md).
        var nextSequence = scan.highestSequence + 1
        if let newest = scan.files.last { nextSequence = max(nextSequence, newest.header.baseSequence) }
        report.segments = scan.files.count
        report.liveKeys = scan.index.entries.count
        report.nextSequence = nextSequence
        let history = changesAfter.map { $0.isHistory(of: scan.files, nextSequence: nextSequence) } ?? false
        return .recovered(
            RecoveredLog(
                segments: scan.files, index: scan.index, nextSequence: nextSequence, active: tail.active,
                activeSize: tail.activeSize, nextSegmentID: scan.nextID,
                endsWithMarker: scan.endsWithMarker && scan.tornTail == nil, readableEnds: tail.readableEnds,
                segmentsWithKnownDamage: configuration.readOnly ? scan.segmentsWithKnownDamage : [], report: report,
                changedKeys: history && report.skipped.isEmpty && report.setAsideFiles.isEmpty ? scan.changedKeys : nil))
    }
}

extension LogPosition {
    /// Whether a log of `files` (oldest first) whose next sequence number is
    /// `nextSequence` still holds the history after this position.
    func isHistory(of files: [SegmentFile], nextSequence: UInt64) -> Bool {
        sequence < nextSequence
            && matches(
                files.map { (Segment(base: $0.header.baseSequence, salt: $0.header.salt), $0.header.coverEnd != nil) })
    }
}
