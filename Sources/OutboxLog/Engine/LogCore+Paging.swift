import SystemPackage

/// `entries(after:limit:)`: pages of live records in sequence order,
/// scanned and verified segment by segment, resuming from where an earlier
/// page stopped (`ScanCursors`).
extension LogCore {
    /// Live entries whose value has a sequence number greater than `after`,
    /// in sequence order, at most `limit` of them. Scans the segments from
    /// the one holding `after`; dead records are skipped, never returned.
    /// Returns the entries and the sequence number to continue after.
    func entries(after: UInt64, limit: Int) async throws(OutboxLogError) -> (entries: [LogEntry], resumeAfter: UInt64?) {
        try await waitForIndex()
        try await flushIfPending()
        /// Everything up to this sequence number was written out, and waited for.
        var flushedThrough: UInt64?
        while true {
            switch try await page(after: after, limit: limit) {
            case .page(let entries, let resumeAfter): return (entries, resumeAfter)
            case .unwritten(let last):
                // A live value's annotation was appended after the flush
                // above and is still in memory: write it out and read the
                // page again (waiting again only for what came since).
                if let flushedThrough, last <= flushedThrough {
                    throw OutboxLogError(.io, "internal error: a written annotation is not readable")
                }
                flushedThrough = last
                try await waitFor(last, durable: false)
            }
        }
    }

    /// One attempt at a page: the segments as they are now, read in place
    /// or on a reader thread.
    private func page(after: UInt64, limit: Int) async throws(OutboxLogError) -> PageOutcome {
        let snapshot = try state.withLock { state throws(OutboxLogError) -> [(SegmentFile, Int64, Bool)] in
            try state.checkReadable()
            var files: [(SegmentFile, Int64, Bool)] = []
            for (position, id) in state.order.enumerated() {
                guard let slot = state.slots[id], let file = slot.file else { continue }
                // Skip segments that end at or before `after` (every one
                // but the last after the largest sequence number).
                if position + 1 < state.order.count, let next = state.slots[state.order[position + 1]],
                    after == .max || next.header.baseSequence <= after + 1
                {
                    continue
                }
                files.append((file, slot.writtenSize, slot.knownDamage))
            }
            return files
        }
        // A reader at the end of the log, resuming where it stopped, reads
        // only what was appended since: a few kilobytes just written, in
        // the page cache. Read them here rather than wake a reader thread
        // and wait for it (as `get` does for small reads); a page that turns
        // out to need more (a moved record, an annotation) goes to a reader
        // thread after all.
        if let resume = smallResume(snapshot, after: after),
            let outcome = try scanEntries(snapshot, after: after, limit: limit, inPlaceFrom: resume)
        {
            return outcome
        }
        return try await readers.run { () throws(OutboxLogError) -> PageOutcome in
            // Never nil on a reader thread: only a page read in place gives up.
            try self.scanEntries(snapshot, after: after, limit: limit, inPlaceFrom: nil) ?? .page([], resumeAfter: nil)
        }
    }

    /// How an attempt at a page ended.
    private enum PageOutcome: Sendable {
        case page([LogEntry], resumeAfter: UInt64?)
        /// A live value's annotation is still in memory: everything up to
        /// this sequence number must be written out first.
        case unwritten(last: UInt64)
    }

    /// The cursor a page after `after` resumes from, if the page is one
    /// segment that the cursor verified up to at most `readsInPlaceUpTo`
    /// bytes from its end, with no records carried over to read again.
    private func smallResume(_ snapshot: [(SegmentFile, Int64, Bool)], after: UInt64) -> ScanCursors.Cursor? {
        let bound = Int64(configuration.readsInPlaceUpTo)
        guard bound > 0, snapshot.count == 1, let (file, writtenSize, knownDamage) = snapshot.first, !knownDamage else {
            return nil
        }
        let cursor = scanCursors.withLock { $0.find(after: after, file: file, scannedSize: writtenSize) }
        guard let cursor, cursor.remaining.isEmpty, writtenSize - cursor.scannedSize <= bound else { return nil }
        return cursor
    }

    /// The blocking part of `entries`: scan, filter by the index, read.
    /// `inPlaceFrom`: the page runs on the caller's thread, resuming from
    /// that cursor; `nil` if it needs a record read from elsewhere (then
    /// nothing was saved, and a reader thread does the page).
    private func scanEntries(
        _ snapshot: [(SegmentFile, Int64, Bool)], after: UInt64, limit: Int, inPlaceFrom resume: ScanCursors.Cursor?
    ) throws(OutboxLogError) -> PageOutcome? {
        var page = Page(after: after, limit: limit, inPlace: resume != nil)
        for (index, (file, writtenSize, knownDamage)) in snapshot.enumerated() {
            let size: Int64
            do throws(Errno) { size = try fileSystem.size(of: file.descriptor) } catch {
                throw .io("cannot read segment size", error, file: file.path)
            }
            let scannedSize = min(size, writtenSize)
            let reader = ChunkedFileReader(
                fileSystem: fileSystem, descriptor: file.descriptor, path: file.path, fileSize: scannedSize)
            var part = try firstCandidates(
                of: file, reader: reader, scannedSize: scannedSize, after: after, knownDamage: knownDamage, resume: resume,
                wanted: page.limit - page.entries.count)
            while true {
                switch try collect(part, of: file, reader: reader, into: &page) {
                case .full: return .page(page.entries, resumeAfter: page.lastScanned)
                case .needsReaderThread: return nil
                case .unwritten(let last): return .unwritten(last: last)
                case .more: break
                }
                // The segment grew since a cursor's scan: verify what was appended.
                guard part.scannedUpTo < scannedSize else { break }
                part = try grownCandidates(
                    of: file, reader: reader, after: part, onlyAbove: after, wanted: page.limit - page.entries.count)
            }
            if let last = part.lastSequence { page.lastScanned = max(page.lastScanned, last) }
            if index == snapshot.count - 1 && !knownDamage {
                // The end of the log, short of a full page: a reader that
                // comes back for what is appended next resumes here. Every
                // candidate was returned or is dead for good (a record
                // never comes back to life: a newer one replaces it).
                saveScanCursor(
                    ScanCursors.Cursor(
                        after: page.entries.last?.sequence ?? after, file: file, scannedSize: part.scannedUpTo,
                        remaining: [], lastSequence: part.lastSequence))
            }
        }
        return .page(page.entries, resumeAfter: nil)
    }

    /// The page being filled.
    private struct Page {
        let limit: Int
        /// On the caller's thread: reads only the records of the scan.
        let inPlace: Bool
        var entries: [LogEntry] = []
        var lastScanned: UInt64

        init(after: UInt64, limit: Int, inPlace: Bool) {
            self.limit = limit
            self.inPlace = inPlace
            lastScanned = after
        }
    }

    private enum CollectOutcome {
        /// The page is full; a cursor was left after its last record.
        case full
        /// Every record of the part was considered.
        case more
        /// A page read in place met a record to read from another file.
        case needsReaderThread
        /// A live value's annotation is not written out yet; nothing was saved.
        case unwritten(last: UInt64)
    }

    /// Verified records of one segment, numbered after the page's `after`,
    /// in order.
    private struct Candidates {
        var records: ArraySlice<ScannedRecord>
        /// The last record of the verified run, `nil` if it has none yet.
        var lastSequence: UInt64?
        /// Records before this offset were verified by an earlier call (a
        /// cursor's): they are verified again when read.
        var verifiedFrom: Int64
        /// How far the segment has been verified.
        var scannedUpTo: Int64
        /// The reader's ``ChunkedFileReader/fills`` when the scan ended.
        var fillsAtScanEnd: Int
    }

    /// Adds the live records of `part` to `page`, checking liveness a few at
    /// a time (only as many as the page still needs, so a long run left by
    /// a cursor is not looked up again and again); `true` once the page is
    /// full, leaving a cursor after its last record.
    private func collect(
        _ part: Candidates, of file: SegmentFile, reader: ChunkedFileReader, into page: inout Page
    ) throws(OutboxLogError) -> CollectOutcome {
        var start = part.records.startIndex
        while start < part.records.endIndex {
            let end = start + min(part.records.endIndex - start, max(page.limit - page.entries.count, 32))
            let (live, files, unwritten) = liveValues(among: part.records[start..<end], in: file)
            if let unwritten { return .unwritten(last: unwritten) }
            if page.inPlace && live.contains(where: { $0.moved || $0.1.annotation.exists }) { return .needsReaderThread }
            for (position, entry, moved) in live {
                let record = part.records[position]
                // Bytes the scan verified, still in the reader's buffer; or
                // bytes read again (an earlier page's, pushed out of the
                // buffer since, or brought back in by a later read: not
                // what the scan verified), verified again.
                let verified =
                    record.offset >= part.verifiedFrom && reader.fills == part.fillsAtScanEnd
                    && reader.holds(record.offset, count: record.length)
                let source: RecordSource = moved ? .moved : (verified ? .scanned(reader) : .reverify(reader, file))
                guard let item = try readEntry(record, entry: entry, from: source, files: files) else { continue }
                page.entries.append(item)
                page.lastScanned = record.sequence
                if page.entries.count == page.limit {
                    saveScanCursor(
                        ScanCursors.Cursor(
                            after: page.lastScanned, file: file, scannedSize: part.scannedUpTo,
                            remaining: part.records[(position + 1)...], lastSequence: part.lastSequence))
                    return .full
                }
            }
            start = end
        }
        return .more
    }

    /// The records of `file` after `after` to start a page with: where a
    /// previous page stopped inside it (or at its end), or from a scan of
    /// it that stops once it has `wanted` of them (a few more: some may be
    /// dead).
    private func firstCandidates(
        of file: SegmentFile, reader: ChunkedFileReader, scannedSize: Int64, after: UInt64, knownDamage: Bool,
        resume: ScanCursors.Cursor?, wanted: Int
    ) throws(OutboxLogError) -> Candidates {
        let found =
            knownDamage
            ? nil : resume.flatMap { $0.scannedSize <= scannedSize ? $0 : nil }
                ?? scanCursors.withLock { $0.find(after: after, file: file, scannedSize: scannedSize) }
        if let resumed = found {
            // A page reads what it needs, not the rest of the segment.
            reader.sizeChunks(forRecords: wanted)
            return Candidates(
                records: resumed.remaining, lastSequence: resumed.lastSequence, verifiedFrom: resumed.scannedSize,
                scannedUpTo: resumed.scannedSize, fillsAtScanEnd: reader.fills)
        }
        if knownDamage {
            // Damage reported at open (read-only salvage): step over it, whole.
            var records: [ScannedRecord] = []
            let collect = { (record: ScannedRecord) in if record.sequence > after { records.append(record) } }
            let scanner = SegmentScanner(reader: reader, header: file.header)
            let run = try SegmentAnalysis.analyze(scanner, file: file.name, visit: collect, visitLater: collect).leading
            return Candidates(
                records: records[...], lastSequence: run.lastSequence, verifiedFrom: 0, scannedUpTo: scannedSize,
                fillsAtScanEnd: reader.fills)
        }
        let start = Candidates(
            records: [], lastSequence: nil, verifiedFrom: Int64(SegmentHeader.size), scannedUpTo: Int64(SegmentHeader.size),
            fillsAtScanEnd: reader.fills)
        return try grownCandidates(of: file, reader: reader, after: start, onlyAbove: after, wanted: wanted)
    }

    /// The records of `file` after `part` was verified, up to its end or
    /// until `wanted` of them (and a few more) were found: a page verifies
    /// what it returns, not the rest of the segment (a segment's written
    /// size, like where such a scan stops, is a frame boundary: the next
    /// scan picks up there, with the sequence number reached).
    private func grownCandidates(
        of file: SegmentFile, reader: ChunkedFileReader, after part: Candidates, onlyAbove after: UInt64, wanted: Int
    ) throws(OutboxLogError) -> Candidates {
        let enough = wanted > Int.max - 64 ? Int.max : wanted + 64
        // A page of a few records reads a few hundred kilobytes at a time;
        // a large one keeps what its scan verified in the buffer.
        reader.sizeChunks(forRecords: enough)
        var records: [ScannedRecord] = []
        let run = try SegmentScanner(reader: reader, header: file.header).scanRun(
            from: part.scannedUpTo, previous: part.lastSequence, resumingAfterDamage: false, until: { records.count >= enough }
        ) { record in if record.sequence > after { records.append(record) } }
        try Self.requireClean(run, file)
        return Candidates(
            records: records[...], lastSequence: run.lastSequence ?? part.lastSequence, verifiedFrom: part.scannedUpTo,
            scannedUpTo: records.count >= enough ? run.end : reader.fileSize, fillsAtScanEnd: reader.fills)
    }

    private static func requireClean(_ run: SegmentScanner.Run, _ file: SegmentFile) throws(OutboxLogError) {
        if let stop = run.stop {
            throw .corruption(
                "segment no longer verifies: \(stop.damage)", file: file.path, offset: stop.frame, damage: stop.damage)
        }
    }

    /// The candidates whose values the index still points at (by position),
    /// the files to read moved values and annotations from, and, if one of
    /// their annotations is still in memory (appended after the page's
    /// flush), the last sequence number to write out before reading it.
    ///
    /// A compaction may have swapped `file` out since the snapshot: its live
    /// records then sit, with the same sequence numbers, in an output file
    /// the snapshot does not have (`moved`) — read them there. Files are
    /// captured under the same lock, or a swap in between would lose an
    /// annotation.
    private func liveValues(
        among candidates: ArraySlice<ScannedRecord>, in file: SegmentFile
    ) -> ([(Int, IndexEntry, moved: Bool)], [UInt32: SegmentFile], unwritten: UInt64?) {
        state.withLock { state -> ([(Int, IndexEntry, moved: Bool)], [UInt32: SegmentFile], unwritten: UInt64?) in
            let swappedOut = state.slots[file.id] == nil
            let here = { (record: ScannedRecord) in
                Location(segment: file.id, offset: UInt32(record.offset), length: UInt32(record.length))
            }
            let live = candidates.indices.compactMap { position -> (Int, IndexEntry, moved: Bool)? in
                let record = candidates[position]
                guard record.kind == .value, let entry = state.index.entries[record.key] else { return nil }
                if entry.value == here(record) { return (position, entry, false) }
                return swappedOut && state.slots[entry.value.segment]?.file != nil ? (position, entry, true) : nil
            }
            let annotated = live.filter { $0.1.annotation.exists }
            if annotated.contains(where: { state.readableFile(for: $0.1.annotation) == nil }) {
                return ([], [:], state.nextSequence - 1)
            }
            let needsFiles = !annotated.isEmpty || live.contains { $0.moved }
            return (live, needsFiles ? state.slots.compactMapValues(\.file) : [:], nil)
        }
    }

    private func saveScanCursor(_ cursor: ScanCursors.Cursor) {
        let current = state.withLock { state in Set(state.slots.values.compactMap { $0.file.map(ObjectIdentifier.init) }) }
        scanCursors.withLock { $0.save(cursor) { current.contains(ObjectIdentifier($0)) } }
    }
}
