import Logging
import OutboxCollections
import SystemPackage

/// What an open with an index checkpoint left to do (``CheckpointedRecovery``).
struct DeferredIndexLoad: Sendable {
    var checkpoint: IndexCheckpoint
    var checkpointFile: FilePath
    /// Every segment but the newest, oldest first (ids from 1).
    var older: [SegmentFile]
    /// How many segments, from the oldest, the checkpoint covers (the last
    /// of them possibly only in part; it may be the newest).
    var coveredCount: Int
    var newest: SegmentFile
    /// The newest segment's records that recovery kept, in order.
    var newestRecords: [ScannedRecord]
}

/// Builds the index an open with a checkpoint left unbuilt, on its own
/// thread while appends go on: the checkpoint's keys (CRC-checked), then
/// every record after the checkpoint — in the sealed segments written after
/// it, each verified, each checked to continue the one before, then the
/// newest segment's records the open already verified. If the checkpoint's
/// keys do not verify, it reads every older segment instead, as a full
/// recovery would. Damage found here fails the log (`.corruption`, with the
/// file and offset): the open had returned, so it is reported late.
struct IndexLoader: Sendable {
    let load: DeferredIndexLoad
    let fileSystem: any FileSystem
    let logger: Logger
    /// Collect the keys of the records after this sequence number.
    let changesAfter: UInt64?
    /// Polled between segments: the log is closing.
    let cancelled: @Sendable () -> Bool

    struct Loaded: Sendable {
        var index: LogIndex
        var changedKeys: Set<LogKey>
        /// Records read (the checkpoint's keys not counted).
        var records: Int
        /// Why the checkpoint's keys were not used, if they were not.
        var rejected: IndexCheckpointRejection?
    }

    struct Cancelled: Error {}

    func run() throws(OutboxLogError) -> Loaded? {
        let rejection: IndexCheckpointRejection
        switch readCheckpointKeys() {
        case .success(let index):
            switch try load(after: index) {
            case .loaded(let loaded): return loaded
            case .cancelled: return nil
            case .rejected(let reason): rejection = reason
            }
        case .failure(let reason): rejection = reason
        }
        logger.warning("index checkpoint not used", metadata: ["reason": "\(rejection)"])
        var loaded = Loaded(index: LogIndex(), changedKeys: [], records: 0, rejected: rejection)
        for file in load.older { loaded.index.usage[file.id] = SegmentUsage() }
        return try apply(segments: load.older, resuming: nil, after: 0, into: loaded)
    }

    private enum Outcome {
        case loaded(Loaded)
        case cancelled
        case rejected(IndexCheckpointRejection)
    }

    /// The index from the checkpoint's keys, then the records after it.
    private func load(after index: LogIndex) throws(OutboxLogError) -> Outcome {
        let covered = load.checkpoint.sequence
        var loaded = Loaded(index: index, changedKeys: [], records: 0)
        // The last covered segment (unless it is the newest) holds the
        // first records after the checkpoint; every later sealed one too.
        let scanned = Array(load.older.dropFirst(load.coveredCount - 1))
        // Keys changed after an earlier point lie in covered segments too:
        // from the last segment that starts at or before the first record
        // after it (the newest one too: its records are the open's, applied
        // below, and then no older one is read).
        var changedFrom = load.older.count
        if let after = changesAfter, after < covered {
            let bases = load.older.map(\.header.baseSequence) + [load.newest.header.baseSequence]
            changedFrom = bases.lastIndex { $0 <= after + 1 } ?? 0
            let end = min(load.coveredCount - 1, load.older.count)
            var buffer = MappedBuffer()
            for file in load.older[min(changedFrom, end)..<end] {
                if cancelled() { return .cancelled }
                _ = try scan(file, applyAfter: .max, into: &loaded, buffer: &buffer)
            }
        }
        // Unless its changed keys are wanted, the last covered segment is
        // read only from the bytes written after the checkpoint (those it
        // covers are verified when read, as in the covered segments before it).
        var resuming: Int64?
        if let first = scanned.first, first.header.coverEnd == nil, changedFrom > load.coveredCount - 1 {
            resuming = load.checkpoint.segments[load.coveredCount - 1].coveredEnd
        }
        do {
            guard let result = try apply(segments: scanned, resuming: resuming, after: covered, into: loaded) else {
                return .cancelled
            }
            return .loaded(result)
        } catch let error where resuming != nil && error.damage != nil {
            // What follows the covered bytes does not continue the records
            // the checkpoint covers: the checkpoint may not describe this
            // file. Read the whole log instead, which finds any damage that
            // is real.
            return .rejected(.recordsAfterDoNotContinue(segment: DirectoryLayout.segmentName(base: scanned[0].header.baseSequence)))
        }
    }

    /// Verifies and applies every record of `segments` (of the first from
    /// byte `resuming` on, if given) and then of the newest segment, after
    /// the sequence number `applyAfter`; `nil` if cancelled.
    private func apply(
        segments: [SegmentFile], resuming: Int64?, after applyAfter: UInt64, into start: Loaded
    ) throws(OutboxLogError) -> Loaded? {
        var loaded = start
        var previous: (header: SegmentHeader, last: UInt64?)?
        // One read buffer for every segment: see `ChunkedFileReader.releaseBuffer()`.
        var buffer = MappedBuffer()
        for (position, file) in segments.enumerated() {
            if cancelled() { return nil }
            if let previous { try checkContinuity(file, after: previous) }
            if applyAfter == 0 || file.id > UInt32(load.coveredCount) { loaded.index.usage[file.id] = SegmentUsage() }
            if position == 0, let resuming {
                // The last record before `resuming`, if any, is the
                // checkpoint's last (an appended segment counts up by one).
                let before = resuming > Int64(SegmentHeader.size) ? applyAfter : nil
                let last = try scan(
                    file, from: resuming, previous: before, applyAfter: applyAfter, into: &loaded, buffer: &buffer)
                previous = (file.header, last ?? before)
            } else {
                previous = (file.header, try scan(file, applyAfter: applyAfter, into: &loaded, buffer: &buffer))
            }
        }
        if let previous { try checkContinuity(load.newest, after: previous) }
        // The newest segment: verified by the open.
        if applyAfter == 0 || load.coveredCount < load.older.count + 1 {
            if loaded.index.usage[load.newest.id] == nil { loaded.index.usage[load.newest.id] = SegmentUsage() }
        }
        for record in load.newestRecords { apply(record, after: applyAfter, file: load.newest, into: &loaded) }
        return loaded
    }

    private func readCheckpointKeys() -> Result<LogIndex, IndexCheckpoint.Rejection> {
        let checkpoint = load.checkpoint
        do {
            let descriptor = try fileSystem.openFile(load.checkpointFile, mode: .readOnly)
            defer { try? fileSystem.close(descriptor) }
            let section = try fileSystem.readBytes(
                descriptor, count: checkpoint.keySectionSize, at: Int64(checkpoint.keySectionOffset))
            return checkpoint.decodeIndex(section, firstID: 1)
        } catch {
            return .failure(.unreadable(error))
        }
    }

    /// Verifies every record of `file` and applies those after `applyAfter`;
    /// returns its last sequence number. Reads into `buffer`'s mapping, and
    /// leaves it there for the next segment.
    private func scan(
        _ file: SegmentFile, from start: Int64 = Int64(SegmentHeader.size), previous: UInt64? = nil, applyAfter: UInt64,
        into loaded: inout Loaded, buffer: inout MappedBuffer
    ) throws(OutboxLogError) -> UInt64? {
        let size: Int64
        do { size = try fileSystem.size(of: file.descriptor) } catch {
            throw .io("cannot read segment size", error, file: file.path)
        }
        fileSystem.adviseWillRead(file.descriptor, offset: 0, length: size)
        let reader = ChunkedFileReader(
            fileSystem: fileSystem, descriptor: file.descriptor, path: file.path, fileSize: size, reusing: buffer.take())
        defer { buffer = reader.releaseBuffer() }
        var records: [ScannedRecord] = []
        let run = try SegmentScanner(reader: reader, header: file.header).scanRun(
            from: start, previous: previous, resumingAfterDamage: false, visit: { records.append($0) })
        if let stop = run.stop {
            throw OutboxLogError(
                .corruption,
                "\(stop.damage) in a segment written before the open (found while loading the index after it); "
                    + "open with recovery mode salvage to keep every intact record",
                file: file.path, offset: stop.frame, damage: stop.damage)
        }
        for record in records { apply(record, after: applyAfter, file: file, into: &loaded) }
        return run.lastSequence
    }

    private func apply(_ record: ScannedRecord, after applyAfter: UInt64, file: SegmentFile, into loaded: inout Loaded) {
        if let after = changesAfter, record.sequence > after, record.kind != .marker { loaded.changedKeys.insert(record.key) }
        guard record.sequence > applyAfter else { return }
        loaded.records += record.kind == .marker ? 0 : 1
        loaded.index.apply(
            record.kind, key: record.key,
            at: Location(segment: file.id, offset: UInt32(record.offset), length: UInt32(record.length)), expiry: record.expiry)
    }

    /// A segment's base must be where the one before it ends (Docs/FORMAT.md,
    /// "Sequence rules").
    private func checkContinuity(_ file: SegmentFile, after previous: (header: SegmentHeader, last: UInt64?)) throws(OutboxLogError) {
        guard let expected = previous.header.coverEnd ?? previous.last.map({ $0 + 1 }) else {
            throw OutboxLogError(
                .corruption, "the segment before this one is empty but not the newest (found while loading the index)",
                file: file.path, offset: 0, damage: .emptySegmentNotNewest(previous: DirectoryLayout.segmentName(base: previous.header.baseSequence)))
        }
        guard file.header.baseSequence == expected else {
            throw OutboxLogError(
                .corruption,
                "segment starts at \(file.header.baseSequence), but the one before it ends at \(expected - 1) "
                    + "(found while loading the index)",
                file: file.path, offset: 0,
                damage: file.header.baseSequence < expected
                    ? .overlapsPrevious(base: file.header.baseSequence) : .missingSequences(expected..<file.header.baseSequence))
        }
    }
}
