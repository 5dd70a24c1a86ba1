import SystemPackage

/// Recovery with an index checkpoint (`INDEX`, Docs/FORMAT.md): when the
/// checkpoint describes this log, the open scans and repairs only the
/// **newest** segment — where a crash can leave a torn tail, and where
/// appends continue — and leaves the rest of the index to ``IndexLoader``:
/// the checkpoint's keys, then the segments written after it, verified.
///
/// The checkpoint describes the log when its segment list is the log's
/// first segments, unchanged, and every later segment was appended
/// (``LogPosition/matches(_:)``); when every segment it lists but the last
/// has the size it had then and the last has at least that size; and when
/// the newest segment still holds everything the checkpoint covers of it
/// after its torn tail is cut. Otherwise the open recovers the whole log as
/// it would without a checkpoint, which is always correct.
struct CheckpointedRecovery {
    let layout: DirectoryLayout
    let configuration: OutboxLog.Configuration
    var fileSystem: any FileSystem { configuration.fileSystem }

    enum Outcome {
        /// Recovered: appends may start; the index is loaded afterwards.
        case recovered(RecoveredLog)
        /// The checkpoint does not describe this log, and nothing was changed.
        case unusable
        /// The checkpoint turned out not to describe this log after the
        /// newest segment was repaired: recover again, without it.
        case recoverAgain
    }

    func run(
        inventory: SegmentInventory, ordered: [SegmentCandidate], report: inout RecoveryReport
    ) throws(OutboxLogError) -> Outcome {
        guard var checkpoint = readHead(report: &report), let newest = ordered.last else { return .unusable }
        guard let covered = coveredCount(checkpoint, ordered, report: &report) else { return .unusable }
        let newestPosition = ordered.count - 1

        // Steps 3 and 5 for the newest segment alone.
        let chain = SegmentChain(
            layout: layout, configuration: configuration, toleratesGaps: false, mayFillGaps: false,
            firstID: UInt32(ordered.count), keepsNewestRecords: true)
        var scan = try chain.scan([newest], inventory: inventory, report: &report)
        if let damaged = scan.damaged.first {
            throw OutboxLogError(
                .corruption, "\(damaged.damage); open with recovery mode salvage to keep every intact record",
                file: damaged.candidate.path, offset: damaged.offset, damage: damaged.damage)
        }
        let tail = try TailRepair(layout: layout, configuration: configuration).run(&scan, report: &report)
        let newestFile = scan.files[0]
        let keptEnd: Int64
        do { keptEnd = try fileSystem.size(of: newestFile.descriptor) } catch {
            throw .io("cannot read segment size", error, file: newestFile.path)
        }
        if covered == ordered.count, keptEnd < checkpoint.segments[newestPosition].coveredEnd {
            // Only markers may go: the trailing ones no watermark vouches for
            // (a clean close's), which the repair cuts and the open rewrites.
            let coveredEnd = checkpoint.segments[newestPosition].coveredEnd
            let cut = scan.newestRecords.filter { $0.offset >= keptEnd && $0.offset < coveredEnd }
            guard cut.allSatisfy({ $0.kind == .marker }),
                keptEnd + cut.reduce(0, { $0 + Int64($1.length) }) == coveredEnd
            else {
                report.checkpointRejected = .newestSegmentLostRecords
                return .recoverAgain
            }
            let bytes = coveredEnd - keptEnd
            checkpoint.segments[newestPosition].coveredEnd = keptEnd
            checkpoint.segments[newestPosition].usage.totalBytes -= bytes
            checkpoint.segments[newestPosition].usage.markerBytes -= bytes
            checkpoint.segments[newestPosition].usage.records -= cut.count
        }

        // Every older segment, unread: the checkpoint vouches for the ones it
        // covers, and the index load verifies the ones after it.
        var older: [SegmentFile] = []
        for (position, candidate) in ordered.dropLast().enumerated() {
            older.append(
                SegmentFile(
                    id: UInt32(position + 1), header: candidate.usableHeader!, path: candidate.path,
                    descriptor: candidate.descriptor, fileSystem: fileSystem))
            inventory.handOver(candidate.descriptor)
        }
        // As a full recovery computes it (Docs/FORMAT.md, "The sequence
        // floor"): the newest segment continues its own numbers.
        let nextSequence = max(scan.highestSequence + 1, newestFile.header.baseSequence)
        let newestRecords = scan.newestRecords.filter { $0.offset + Int64($0.length) <= keptEnd }
        report.segments = ordered.count
        report.nextSequence = nextSequence
        report.indexCheckpoint = checkpoint.sequence
        let load = DeferredIndexLoad(
            checkpoint: checkpoint, checkpointFile: layout.indexCheckpointFile, older: older, coveredCount: covered,
            newest: newestFile, newestRecords: newestRecords)
        return .recovered(
            RecoveredLog(
                segments: older + [newestFile], index: LogIndex(), nextSequence: nextSequence, active: tail.active,
                activeSize: tail.activeSize, nextSegmentID: UInt32(ordered.count + 1),
                endsWithMarker: scan.endsWithMarker && scan.tornTail == nil && !newestRecords.isEmpty,
                report: report, deferredLoad: load))
    }

    /// The checkpoint's header and segment table, if the file is there and
    /// verifies.
    private func readHead(report: inout RecoveryReport) -> IndexCheckpoint? {
        let path = layout.indexCheckpointFile
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
            if error != .noSuchFileOrDirectory { report.checkpointRejected = .unreadable(error) }
            return nil
        }
        defer { try? fileSystem.close(descriptor) }
        do {
            let header = try fileSystem.readBytes(descriptor, count: IndexCheckpoint.headerSize, at: 0)
            let tableSize = try IndexCheckpoint.tableSize(fromHeader: header).get()
            // The size before the table: a count read from the file must not
            // make this read allocate more than the file holds.
            let size = try fileSystem.size(of: descriptor)
            guard Int64(IndexCheckpoint.headerSize) + Int64(tableSize) <= size else {
                report.checkpointRejected = .fileSizeMismatch(size)
                return nil
            }
            let table = try fileSystem.readBytes(descriptor, count: tableSize, at: Int64(IndexCheckpoint.headerSize))
            let checkpoint = try IndexCheckpoint.decodeHead(header + table).get()
            guard size == Int64(checkpoint.keySectionOffset + checkpoint.keySectionSize) else {
                report.checkpointRejected = .fileSizeMismatch(size)
                return nil
            }
            return checkpoint
        } catch let rejection as IndexCheckpointRejection {
            report.checkpointRejected = rejection
        } catch {
            report.checkpointRejected = .unreadable((error as? Errno) ?? .ioError)
        }
        return nil
    }

    /// How many of `ordered`'s first segments the checkpoint covers, if it
    /// describes them (see the type's documentation).
    private func coveredCount(
        _ checkpoint: IndexCheckpoint, _ ordered: [SegmentCandidate], report: inout RecoveryReport
    ) -> Int? {
        var current: [(segment: LogPosition.Segment, rewritten: Bool)] = []
        for candidate in ordered {
            guard let header = candidate.usableHeader else {
                report.checkpointRejected = .segmentHeaderUnreadable(segment: candidate.name)
                return nil
            }
            current.append((LogPosition.Segment(base: header.baseSequence, salt: header.salt), header.coverEnd != nil))
        }
        let count = checkpoint.segments.count
        guard count >= 1, checkpoint.position.matches(current) else {
            report.checkpointRejected = .segmentsChanged
            return nil
        }
        for (position, segment) in checkpoint.segments.enumerated() {
            let candidate = ordered[position]
            let sealed = position < count - 1
            guard candidate.usableHeader!.coverEnd == segment.coverEnd,
                sealed ? candidate.size == segment.coveredEnd : candidate.size >= segment.coveredEnd
            else {
                report.checkpointRejected = .segmentSizeChanged(segment: candidate.name)
                return nil
            }
        }
        return count
    }
}
