import SystemPackage

/// Recovery, step 3: every record of every effective segment verified, in
/// order (the read-ahead thread scans one segment while this builds the
/// index from the last), the segments checked to continue each other's
/// sequence numbers, and every damage classified: a torn tail (the newest
/// segment's unsynced end, cut by step 5), damage salvage must repair
/// (step 4), or a gap in the sequence numbers.
struct SegmentChain {
    let layout: DirectoryLayout
    let configuration: OutboxLog.Configuration
    /// Whether gaps between segments are tolerated (salvage mode, or a
    /// pass after salvage) and recorded for repair rather than failing.
    let toleratesGaps: Bool
    /// Whether salvage may still fill gaps (it gets a few passes).
    let mayFillGaps: Bool
    /// The id of the first segment scanned (the next ones count up).
    var firstID: UInt32 = 1
    /// Keep the newest segment's records (``Scan/newestRecords``): an open
    /// with a checkpoint applies them after loading the rest of the index.
    var keepsNewestRecords = false
    /// Collect the keys of records after this sequence number
    /// (``Scan/changedKeys``).
    var changedKeysAfter: UInt64? = nil

    var fileSystem: any FileSystem { configuration.fileSystem }

    /// What the scan found.
    struct Scan {
        var files: [SegmentFile] = []
        /// The candidate each of `files` was made from, by segment id.
        var candidates: [UInt32: SegmentCandidate] = [:]
        var index = LogIndex()
        var nextID: UInt32 = 1
        /// Damage other than a torn tail.
        var damaged: [DamagedSegment] = []
        /// Ranges of sequence numbers no segment holds.
        var gaps: [SequenceGap] = []
        var tornTail: TornTail?
        /// Where the newest (appended) segment's records stop being vouched
        /// for by a durable watermark: from there on, they may have been read
        /// from the page cache without being on disk.
        var newestUnprovenFrom: Int64?
        /// The newest (appended) segment's valid records from its start.
        var newestLeadingRun: SegmentScanner.Run?
        /// Where the newest (appended) segment's records end when only zero
        /// bytes follow them: space allocated ahead and never written
        /// (Docs/FORMAT.md): not damage, not a torn tail.
        var newestZeroTailFrom: Int64?
        /// How many records no watermark vouches for are only markers (a
        /// clean close's, say), which carry no data and may simply be cut;
        /// `nil` if some of them hold data.
        var newestUnprovenMarkers: Int?
        /// Segments whose damage read-only salvage steps over in scans.
        var segmentsWithKnownDamage: Set<UInt32> = []
        /// The highest sequence number any segment proves was used.
        var highestSequence: UInt64 = 0
        /// Whether the newest record is a marker (a clean close).
        var endsWithMarker = true
        /// The newest segment's records, if kept.
        var newestRecords: [ScannedRecord] = []
        /// Keys of records after ``SegmentChain/changedKeysAfter``.
        var changedKeys: Set<LogKey> = []
    }

    /// The newest segment's end that a crash left unsynced.
    struct TornTail {
        var candidate: SegmentCandidate
        var analysis: SegmentAnalysis
        var id: UInt32
    }

    /// The segment before the one being checked.
    private struct Previous {
        var header: SegmentHeader?
        var name: String
        var lastSequence: UInt64?
        var damaged: Bool

        /// The header of an undamaged predecessor: only its end is trusted.
        var trustedHeader: SegmentHeader? { damaged ? nil : header }
        /// Where the next segment must start, if an undamaged predecessor says.
        var expectedNext: UInt64? {
            guard let header = trustedHeader else { return nil }
            return header.coverEnd ?? lastSequence.map { $0 + 1 }
        }
    }

    func scan(
        _ ordered: [SegmentCandidate], inventory: SegmentInventory, report: inout RecoveryReport
    ) throws(OutboxLogError) -> Scan {
        var scan = Scan()
        scan.nextID = firstID
        var previous: Previous?
        let totalBytes = ordered.reduce(Int64(0)) { $0 + $1.size }
        var scannedBytes: Int64 = 0
        // Read-only salvage serves the intact records past damage in place.
        let indexLaterRuns = configuration.readOnly && toleratesGaps
        let prefetcher = SegmentPrefetcher(
            ordered.compactMap { candidate in
                candidate.usableHeader.map { header in
                    SegmentPrefetcher.Job(
                        fileSystem: fileSystem, descriptor: candidate.descriptor, path: candidate.path,
                        size: candidate.size, header: header, name: candidate.name)
                }
            },
            collectLaterRecords: indexLaterRuns)
        defer { prefetcher.finish() }

        for (position, candidate) in ordered.enumerated() {
            let earlier = previous
            // Size the index once, from what the first segments hold, rather
            // than let it double (and rehash every key) a dozen times.
            if scannedBytes > 0 && position <= 2 {
                let estimate = Double(scan.index.entries.count) / Double(scannedBytes) * Double(totalBytes)
                if estimate > Double(scan.index.entries.capacity) { scan.index.entries.reserveCapacity(Int(estimate * 1.1)) }
            }
            scannedBytes += candidate.size
            report.bytes += candidate.size
            // Every segment with a usable header was scanned, in order.
            guard let header = candidate.usableHeader else {
                scan.damaged.append(unreadableHeader(candidate, after: earlier))
                previous = Previous(header: nil, name: candidate.name, lastSequence: nil, damaged: true)
                continue
            }
            let scanned = try prefetcher.next()
            if let broken = checkContinuity(candidate, header, after: earlier, into: &scan, report: &report) {
                previous = broken
                continue
            }
            let analysis = scanned.analysis
            let ending = Self.ending(of: analysis, header, isNewest: position == ordered.count - 1)
            if ending == .zeroTail { scan.newestZeroTailFrom = analysis.damage?.offset }
            // A torn tail's later records are dropped with it: never indexed
            // or counted, so verify's counts are what a read serves.
            let file = index(
                candidate, header, scanned, isNewest: position == ordered.count - 1,
                includingLaterRecords: ending != .tornTail, into: &scan, inventory: inventory, report: &report)
            switch ending {
            case .clean, .zeroTail: break
            case .tornTail: scan.tornTail = TornTail(candidate: candidate, analysis: analysis, id: file.id)
            case .damaged: Self.noteDamage(candidate, header, analysis, file: file.id, into: &scan)
            }
            previous = Previous(
                header: header, name: candidate.name,
                lastSequence: analysis.leading.lastSequence ?? header.coverEnd.map { $0 - 1 }, damaged: ending == .damaged)
        }
        return scan
    }

    /// How a segment's records end.
    enum Ending {
        /// At the end of the file.
        case clean
        /// In zeros: space allocated ahead, which only the newest appended
        /// segment may have (anywhere else zero bytes are damage).
        case zeroTail
        /// In damage no later record vouches was ever synced, in the newest
        /// appended segment: a write cut short by a crash, cut off.
        case tornTail
        /// In damage: rot, or bytes a later record proves were synced.
        case damaged
    }

    static func ending(of analysis: SegmentAnalysis, _ header: SegmentHeader, isNewest: Bool) -> Ending {
        guard let damage = analysis.damage else { return .clean }
        let newestAppended = isNewest && header.coverEnd == nil
        if newestAppended && damage.isZeroTail { return .zeroTail }
        // Damage is a torn tail only if no later record vouches that the
        // damaged bytes had been synced: then it is rot.
        let firstLost = analysis.firstLostSequence(base: header.baseSequence)
        let provablyUnsynced = damage.recordsAfter == 0 || damage.maximumWatermarkAfter < firstLost
        return newestAppended && provablyUnsynced ? .tornTail : .damaged
    }

    /// Records the damage of segment `file` in `scan`.
    private static func noteDamage(
        _ candidate: SegmentCandidate, _ header: SegmentHeader, _ analysis: SegmentAnalysis, file: UInt32,
        into scan: inout Scan
    ) {
        guard let damage = analysis.damage else { return }
        scan.segmentsWithKnownDamage.insert(file)
        if let after = damage.highestSequenceAfter { scan.highestSequence = max(scan.highestSequence, after) }
        let found: LogDamage =
            damage.recordsAfter > 0
            ? .followedByRecords(damage.damage, records: damage.recordsAfter) : .inSealedSegment(damage.damage)
        scan.damaged.append(
            DamagedSegment(candidate: candidate, header: header, offset: damage.frameOffset, damage: found, analysis: analysis))
    }

    /// A segment whose header is unreadable (or names another base): nothing
    /// in it is trusted, not even its range, which starts where an intact
    /// predecessor ends (salvage accounts for it from there).
    private func unreadableHeader(_ candidate: SegmentCandidate, after earlier: Previous?) -> DamagedSegment {
        let damage: LogDamage
        switch candidate.header {
        case .success(let header): damage = .headerNamesOtherBase(header: header.baseSequence, fileName: candidate.base)
        case .failure(let failure): damage = .segmentHeader(failure)
        }
        return DamagedSegment(
            candidate: candidate, header: nil, offset: 0, damage: damage,
            minimumSequence: earlier?.expectedNext ?? candidate.base)
    }

    /// Sequence numbers must continue from an undamaged predecessor. (A
    /// damaged segment's salvaged copy is given the range up to this
    /// segment's base, so only undamaged predecessors are checked.) Returns
    /// what to remember of this segment if it cannot join the chain.
    private func checkContinuity(
        _ candidate: SegmentCandidate, _ header: SegmentHeader, after earlier: Previous?, into scan: inout Scan,
        report: inout RecoveryReport
    ) -> Previous? {
        guard let earlier, let previousHeader = earlier.trustedHeader else { return nil }
        let expected = earlier.expectedNext
        if let expected, header.baseSequence < expected {
            scan.damaged.append(
                DamagedSegment(
                    candidate: candidate, header: header, offset: 0,
                    damage: .overlapsPrevious(base: header.baseSequence),
                    minimumSequence: expected))
            return Previous(
                header: header, name: candidate.name, lastSequence: max(earlier.lastSequence ?? 0, expected - 1),
                damaged: true)
        }
        let gap: LogDamage?
        if let expected {
            gap = header.baseSequence > expected ? .missingSequences(expected..<header.baseSequence) : nil
        } else {
            gap = .emptySegmentNotNewest(previous: earlier.name)
        }
        guard let gap else { return nil }
        guard toleratesGaps else {
            scan.damaged.append(DamagedSegment(candidate: candidate, header: header, offset: 0, damage: gap))
            return Previous(header: header, name: candidate.name, lastSequence: nil, damaged: true)
        }
        report.skipped.append(.init(file: candidate.name, offset: 0, bytes: 0, damage: gap))
        if mayFillGaps {
            // Salvage records the loss on disk, so the next open (strict,
            // say) does not trip over the same gap. (A gap may show only
            // once the damage around it is repaired: hence more than one
            // pass.)
            scan.gaps.append(
                expected.map { SequenceGap(from: $0, to: header.baseSequence, replacing: nil) }
                    ?? SequenceGap(
                        from: previousHeader.baseSequence, to: header.baseSequence,
                        replacing: (previousHeader.salt, earlier.name)))
        }
        return nil
    }

    /// Applies `records` to the index in order; returns how many are not
    /// markers. Every record of an open passes here: the records are read
    /// in place, not copied out one by one.
    private func indexRecords(_ records: [ScannedRecord], of segment: UInt32, into scan: inout Scan) -> Int {
        var count = 0
        let after = changedKeysAfter
        records.withUnsafeBufferPointer { records in
            for position in records.indices {
                let kind = records[position].kind
                if kind != .marker {
                    count += 1
                    if let after, records[position].sequence > after { scan.changedKeys.insert(records[position].key) }
                }
                let location = Location(
                    segment: segment, offset: UInt32(records[position].offset), length: UInt32(records[position].length))
                scan.index.apply(kind, key: records[position].key, at: location, expiry: records[position].expiry)
            }
        }
        return count
    }

    /// Adds a scanned segment to the log: a ``SegmentFile`` that owns its
    /// descriptor from now on, and its records in the index.
    private func index(
        _ candidate: SegmentCandidate, _ header: SegmentHeader, _ scanned: ScannedSegment, isNewest: Bool,
        includingLaterRecords: Bool, into scan: inout Scan, inventory: SegmentInventory, report: inout RecoveryReport
    ) -> SegmentFile {
        let file = SegmentFile(
            id: scan.nextID, header: header, path: candidate.path, descriptor: candidate.descriptor,
            fileSystem: fileSystem)
        inventory.handOver(candidate.descriptor)
        scan.nextID += 1
        scan.index.usage[file.id] = SegmentUsage()
        var recordCount = indexRecords(scanned.records, of: file.id, into: &scan)
        if includingLaterRecords { recordCount += indexRecords(scanned.laterRecords, of: file.id, into: &scan) }
        let analysis = scanned.analysis
        if isNewest && header.coverEnd == nil {
            // A record is proven durable once a later one carries a
            // watermark at or above its sequence number.
            let proven = analysis.leading.maximumWatermark
            if let first = scanned.records.firstIndex(where: { $0.sequence > proven }) {
                let unproven = scanned.records[first...]
                scan.newestUnprovenFrom = unproven.first!.offset
                scan.newestUnprovenMarkers = unproven.allSatisfy { $0.kind == .marker } ? unproven.count : nil
            }
            scan.newestLeadingRun = analysis.leading
        }
        if isNewest && keepsNewestRecords { scan.newestRecords = scanned.records }
        report.records += recordCount
        scan.files.append(file)
        scan.candidates[file.id] = candidate
        if analysis.leading.records > 0 { scan.endsWithMarker = analysis.leading.endsWithMarker }
        if let last = analysis.leading.lastSequence { scan.highestSequence = max(scan.highestSequence, last) }
        if let coverEnd = header.coverEnd { scan.highestSequence = max(scan.highestSequence, coverEnd - 1) }
        return file
    }
}
