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
}

/// Opens a log directory: verifies every segment, finishes or rolls back an
/// interrupted compaction, cuts a torn tail, salvages if asked, and rebuilds
/// the index.
///
/// The order matters:
/// 1. read every header (an unknown format version fails *before* anything
///    is modified);
/// 2. finish or roll back an interrupted compaction;
/// 3. scan every record and classify damage;
/// 4. in strict mode, fail on any damage but a torn tail (nothing modified);
///    in salvage mode, rewrite each damaged segment with its intact records,
///    move the original to `damaged/`, and start again;
/// 5. cut the torn tail and sync.
struct Recovery {
    let layout: DirectoryLayout
    let configuration: OutboxLog.Configuration
    var fileSystem: any FileSystem { configuration.fileSystem }
    var logger: Logger { configuration.logger }
    var swap: SegmentSwap { SegmentSwap(layout: layout, fileSystem: fileSystem) }

    func run() throws(OutboxLogError) -> RecoveredLog {
        let clock = ContinuousClock()
        let start = clock.now
        var report = RecoveryReport(directory: layout.directory.string)
        report.readOnly = configuration.readOnly
        var result = try attempt(report: &report, salvagePasses: 0)
        result.report.duration = clock.now - start
        return result
    }

    // MARK: - One pass

    /// A segment file found on disk, with its decoded header.
    private struct Candidate {
        var base: UInt64
        var path: FilePath
        var descriptor: FileDescriptor
        var size: Int64
        var header: Result<SegmentHeader, SegmentHeader.DecodeError>
    }

    private func attempt(report: inout RecoveryReport, salvagePasses: Int) throws(OutboxLogError) -> RecoveredLog {
        let salvaged = salvagePasses > 0
        let names: [String]
        do { names = try fileSystem.contentsOfDirectory(layout.directory) } catch {
            throw .io("cannot list the log directory", error, file: layout.directory)
        }
        var segmentBases: [UInt64] = []
        var compactingBases: [UInt64] = []
        var temporaries: [String] = []
        var hasIntent = false
        for name in names {
            switch DirectoryLayout.classify(name) {
            case .segment(let base): segmentBases.append(base)
            case .compactingSegment(let base): compactingBases.append(base)
            case .temporarySegment, .temporaryIntent: temporaries.append(name)
            case .intent: hasIntent = true
            case .lock, .damagedDirectory: break
            case .unknown: logger.debug("ignoring unknown file in log directory", metadata: ["file": "\(name)"])
            }
        }

        // 1. Headers first: nothing is modified until every one is known.
        var opened: [Candidate] = []
        defer { for candidate in opened where candidate.descriptor.rawValue >= 0 { try? fileSystem.close(candidate.descriptor) } }
        func open(_ path: FilePath, base: UInt64) throws(OutboxLogError) -> Candidate {
            let descriptor: FileDescriptor
            do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
                throw .io("cannot open segment", error, file: path)
            }
            do {
                let (header, size) = try fileSystem.readSegmentHeader(descriptor)
                let candidate = Candidate(base: base, path: path, descriptor: descriptor, size: size, header: header)
                opened.append(candidate)
                if case .failure(.unsupportedVersion(let version)) = header {
                    throw OutboxLogError(
                        .unsupportedFormat, "segment format version \(version) is newer than this library (1)",
                        file: path, offset: 8)
                }
                return candidate
            } catch let error as OutboxLogError {
                throw error
            } catch {
                try? fileSystem.close(descriptor)
                throw .io("cannot read segment header", error as? Errno ?? .ioError, file: path)
            }
        }
        var segments: [UInt64: Candidate] = [:]
        for base in segmentBases { segments[base] = try open(layout.segmentFile(base: base), base: base) }
        var compacting: [UInt64: Candidate] = [:]
        for base in compactingBases { compacting[base] = try open(layout.compactingSegmentFile(base: base), base: base) }

        // 2. An interrupted compaction: the effective set of segments.
        var intent: CompactionIntent?
        if hasIntent {
            switch CompactionIntent.decode(try fileSystem.readWholeFile(layout.intentFile)) {
            case .success(let decoded): intent = decoded
            case .failure(.unsupportedVersion(let version)):
                throw OutboxLogError(
                    .unsupportedFormat, "compaction record format version \(version) is unknown", file: layout.intentFile)
            case .failure(.corrupt(let reason)):
                throw .corruption("compaction record is damaged: \(reason)", file: layout.intentFile)
            }
        }
        var effective = segments
        if let intent {
            let outputSalts = Set(intent.outputs.map(\.salt))
            for input in intent.inputs {
                if let existing = effective[input.base],
                    !outputSalts.contains((try? existing.header.get())?.salt ?? 0)
                {
                    effective[input.base] = nil
                }
            }
            for output in intent.outputs {
                if let pending = compacting[output.base], (try? pending.header.get())?.salt == output.salt {
                    effective[output.base] = pending
                } else if (try? effective[output.base]?.header.get())?.salt != output.salt {
                    throw .corruption(
                        "a committed compaction's output is missing", file: layout.segmentFile(base: output.base))
                }
            }
        }

        if !configuration.readOnly {
            if let intent {
                try finishSwap(intent, segments: segments)
                report.interruptedCompaction = .completed
                for base in intent.outputs.map(\.base) {
                    // Its descriptor stays valid across the rename; record the final name.
                    effective[base]?.path = layout.segmentFile(base: base)
                }
            } else if !compacting.isEmpty {
                for base in compactingBases { try swap.remove(layout.compactingSegmentFile(base: base)) }
                report.interruptedCompaction = .rolledBack
            }
            for name in temporaries {
                try swap.remove(layout.directory.appending(name))
                report.removedTemporaryFiles.append(name)
            }
            if intent != nil || !compacting.isEmpty || !temporaries.isEmpty { try fileSystem.syncDirectory(layout.directory) }
        } else {
            if intent != nil { report.interruptedCompaction = .completed }
            else if !compacting.isEmpty { report.interruptedCompaction = .rolledBack }
            report.removedTemporaryFiles = temporaries
        }

        // 3. Scan every record, oldest segment first.
        let ordered = effective.values.sorted { $0.base < $1.base }
        var index = LogIndex()
        var files: [SegmentFile] = []
        var nextID: UInt32 = 1
        var damaged: [DamagedSegment] = []
        // Ranges of sequence numbers salvage will mark as lost.
        var gaps: [Gap] = []
        var tornTail: (candidate: Candidate, analysis: SegmentAnalysis, id: UInt32)?
        // Where the newest segment's records stop being vouched for by a
        // durable watermark (see `rewrite(_:path:from:to:)`).
        var newestUnprovenFrom: Int64?
        var segmentsWithKnownDamage: Set<UInt32> = []
        // The segment before this one; its end is only trusted if it was undamaged.
        var previous: (header: SegmentHeader?, name: String, lastSequence: UInt64?, damaged: Bool)?
        var highestSequence: UInt64 = 0
        var endsWithMarker = true
        let tolerateGaps = salvaged || configuration.recoveryMode == .salvage

        let totalBytes = ordered.reduce(Int64(0)) { $0 + $1.size }
        var scannedBytes: Int64 = 0
        // Read-only salvage serves the intact records past damage in place.
        let indexLaterRuns = configuration.readOnly && tolerateGaps
        func hasUsableHeader(_ candidate: Candidate) -> Bool {
            if case .success(let header) = candidate.header, header.baseSequence == candidate.base { return true }
            return false
        }
        let prefetcher = SegmentPrefetcher(
            ordered.compactMap { candidate in
                guard hasUsableHeader(candidate), case .success(let header) = candidate.header else { return nil }
                return SegmentPrefetcher.Job(
                    fileSystem: fileSystem, descriptor: candidate.descriptor, path: candidate.path,
                    size: candidate.size, header: header,
                    name: candidate.path.lastComponent?.string ?? candidate.path.string)
            },
            collectLaterRecords: indexLaterRuns)
        defer { prefetcher.finish() }
        for (position, candidate) in ordered.enumerated() {
            let earlier = previous
            // Size the index once, from what the first segments hold, rather
            // than let it double (and rehash every key) a dozen times.
            if scannedBytes > 0 && position <= 2 {
                let estimate = Double(index.entries.count) / Double(scannedBytes) * Double(totalBytes)
                if estimate > Double(index.entries.capacity) { index.entries.reserveCapacity(Int(estimate * 1.1)) }
            }
            scannedBytes += candidate.size
            let name = candidate.path.lastComponent?.string ?? candidate.path.string
            let isNewest = position == ordered.count - 1
            report.bytes += candidate.size
            // Every segment with a usable header was scanned, in order.
            let scanned = hasUsableHeader(candidate) ? try prefetcher.next() : nil
            guard let scanned, case .success(let header) = candidate.header else {
                let reason: String
                switch candidate.header {
                case .success(let header): reason = "header names base \(header.baseSequence), the file name \(candidate.base)"
                case .failure(let failure): reason = "bad segment header (\(failure))"
                }
                // Its range starts where the previous segment's ends, if
                // that one is intact: salvage accounts for it from there.
                var rangeStart = candidate.base
                if let earlier, !earlier.damaged, let previousHeader = earlier.header,
                    let expected = previousHeader.coverEnd ?? earlier.lastSequence.map({ $0 + 1 })
                {
                    rangeStart = expected
                }
                damaged.append(
                    DamagedSegment(
                        candidate: candidate, header: nil, offset: 0, reason: reason, minimumSequence: rangeStart))
                previous = (nil, name, nil, true)
                continue
            }
            // Sequence numbers must continue from the previous segment.
            // (A damaged segment's salvaged copy is given the range up to
            // this segment's base, so only undamaged predecessors are checked.)
            if let earlier, !earlier.damaged, let previousHeader = earlier.header {
                let expected: UInt64? = previousHeader.coverEnd ?? earlier.lastSequence.map { $0 + 1 }
                if let expected, header.baseSequence < expected {
                    let reason = "segment starts at \(header.baseSequence), inside the previous segment's range"
                    damaged.append(
                        DamagedSegment(
                            candidate: candidate, header: header, offset: 0, reason: reason, minimumSequence: expected))
                    previous = (header, name, max(earlier.lastSequence ?? 0, expected - 1), true)
                    continue
                }
                let gap: String? =
                    if let expected {
                        header.baseSequence > expected
                            ? "sequences \(expected)..<\(header.baseSequence) are missing before this segment (was a segment file deleted?)"
                            : nil
                    } else {
                        "the previous segment \(earlier.name) is empty but not the newest"
                    }
                if let gap {
                    if !tolerateGaps {
                        damaged.append(DamagedSegment(candidate: candidate, header: header, offset: 0, reason: gap))
                        previous = (header, name, nil, true)
                        continue
                    }
                    report.skipped.append(.init(file: name, offset: 0, bytes: 0, reason: gap))
                    if salvagePasses < Self.maximumGapPasses {
                        // Salvage records the loss on disk, so the next open
                        // (strict, say) does not trip over the same gap. (A
                        // gap may show only once the damage around it is
                        // repaired: hence more than one pass.)
                        gaps.append(
                            expected.map { Gap(from: $0, to: header.baseSequence, replacing: nil) }
                                ?? Gap(
                                    from: previousHeader.baseSequence, to: header.baseSequence,
                                    replacing: (previousHeader.salt, earlier.name)))
                    }
                }
            }

            let file = SegmentFile(
                id: nextID, header: header, path: candidate.path, descriptor: candidate.descriptor,
                fileSystem: fileSystem)
            // The SegmentFile owns the descriptor now.
            if let at = opened.firstIndex(where: { $0.descriptor == candidate.descriptor }) {
                opened[at].descriptor = FileDescriptor(rawValue: -1)
            }
            nextID += 1
            let id = file.id
            index.usage[id] = SegmentUsage()
            var recordCount = 0
            for records in [scanned.records, scanned.laterRecords] {
                for record in records {
                    if record.kind != .marker { recordCount += 1 }
                    index.apply(
                        record.kind, key: record.key,
                        at: Location(segment: id, offset: UInt32(record.offset), length: UInt32(record.length)))
                }
            }
            let analysis = scanned.analysis
            if isNewest && header.coverEnd == nil {
                // A record is proven durable once a later one carries a
                // watermark at or above its sequence number.
                let proven = analysis.leading.maximumWatermark
                newestUnprovenFrom = scanned.records.first { $0.sequence > proven }?.offset
            }
            report.records += recordCount
            files.append(file)
            endsWithMarker = analysis.leading.records == 0 ? endsWithMarker : analysis.leading.endsWithMarker
            if let last = analysis.leading.lastSequence { highestSequence = max(highestSequence, last) }
            if let coverEnd = header.coverEnd { highestSequence = max(highestSequence, coverEnd - 1) }
            if let damage = analysis.damage {
                let firstLost = analysis.firstLostSequence(base: header.baseSequence)
                let provablyUnsynced = damage.recordsAfter == 0 || damage.maximumWatermarkAfter < firstLost
                if isNewest && header.coverEnd == nil && provablyUnsynced {
                    tornTail = (candidate, analysis, file.id)
                } else {
                    segmentsWithKnownDamage.insert(file.id)
                    if let after = damage.highestSequenceAfter { highestSequence = max(highestSequence, after) }
                    let reason = damage.recordsAfter > 0
                        ? "\(damage.reason), followed by \(damage.recordsAfter) valid record(s)"
                        : "\(damage.reason) in a sealed segment"
                    damaged.append(
                        DamagedSegment(candidate: candidate, header: header, offset: damage.offset, reason: reason, analysis: analysis))
                }
            }
            let segmentDamaged = analysis.damage != nil && tornTail?.id != file.id
            previous = (header, name, analysis.leading.lastSequence ?? (header.coverEnd.map { $0 - 1 }), segmentDamaged)
        }

        // 4. Damage other than a torn tail.
        if !gaps.isEmpty && damaged.isEmpty && !configuration.readOnly {
            try salvage([], gaps: gaps, ordered: ordered, highestSequence: highestSequence, report: &report)
            files.removeAll()
            report.restartCounts()
            return try attempt(report: &report, salvagePasses: salvagePasses + 1)
        }
        if let first = damaged.first {
            if configuration.recoveryMode == .strict || salvaged {
                throw OutboxLogError(
                    .corruption,
                    first.reason + (damaged.count > 1 ? " (and \(damaged.count - 1) more damaged segment(s))" : "")
                        + "; open with recovery mode salvage to keep every intact record",
                    file: first.candidate.path, offset: first.offset)
            }
            if configuration.readOnly {
                for segment in damaged {
                    report.skipped += segment.analysis?.damage?.skipped
                        ?? [.init(file: segment.name, offset: segment.offset, bytes: segment.candidate.size - segment.offset, reason: segment.reason)]
                }
            } else {
                try salvage(damaged, gaps: gaps, ordered: ordered, highestSequence: highestSequence, report: &report)
                files.removeAll()
                report.restartCounts()
                return try attempt(report: &report, salvagePasses: salvagePasses + 1)
            }
        }

        // 5. The torn tail.
        var active: SegmentFile? = nil
        var activeSize: Int64 = 0
        var readableEnds: [UInt32: Int64] = [:]
        if let (candidate, analysis, id) = tornTail, let damage = analysis.damage {
            let name = candidate.path.lastComponent?.string ?? candidate.path.string
            report.truncatedTail = .init(
                file: name, offset: damage.offset, bytes: candidate.size - damage.offset, reason: damage.reason,
                unreachableRecords: damage.recordsAfter)
            let metadata: Logger.Metadata = [
                "file": "\(name)", "offset": "\(damage.offset)", "bytes": "\(candidate.size - damage.offset)",
            ]
            if configuration.readOnly {
                readableEnds[id] = damage.offset
                logger.info("found a torn tail (read-only: left in place)", metadata: metadata)
            } else {
                try cutTornTail(
                    candidate, at: damage.offset, emptied: analysis.leading.records == 0, rewritingFrom: newestUnprovenFrom,
                    files: &files, index: &index)
                logger.warning("cut a torn tail", metadata: metadata)
            }
        } else if let newest = files.last, newest.header.coverEnd == nil, !configuration.readOnly {
            // Appends continue in the newest segment. Make it durable once
            // (rewriting what no watermark vouches for), so every record
            // recovered is on stable storage before any new record claims so
            // in its durable watermark.
            let descriptor: FileDescriptor
            do {
                descriptor = try fileSystem.openFile(newest.path, mode: .readWrite)
            } catch {
                throw .io("cannot reopen the newest segment for appending", error, file: newest.path)
            }
            do throws(OutboxLogError) {
                if let from = newestUnprovenFrom {
                    try rewrite(descriptor, path: newest.path, from: from, to: ordered.last!.size)
                }
                do { try fileSystem.synchronize(descriptor) } catch {
                    throw .io("cannot sync the newest segment", error, file: newest.path)
                }
            } catch {
                try? fileSystem.close(descriptor)
                throw error
            }
            let writable = SegmentFile(
                id: newest.id, header: newest.header, path: newest.path, descriptor: descriptor, fileSystem: fileSystem)
            files[files.count - 1] = writable
            active = writable
            activeSize = ordered.last!.size
        }

        var nextSequence = highestSequence + 1
        if let newest = files.last { nextSequence = max(nextSequence, newest.header.baseSequence) }
        report.segments = files.count
        report.liveKeys = index.entries.count
        report.nextSequence = nextSequence
        return RecoveredLog(
            segments: files, index: index, nextSequence: nextSequence, active: active, activeSize: activeSize,
            nextSegmentID: nextID, endsWithMarker: endsWithMarker && tornTail == nil, readableEnds: readableEnds,
            segmentsWithKnownDamage: configuration.readOnly ? segmentsWithKnownDamage : [], report: report)
    }

    // MARK: - Repairs

    /// How many times salvage may fill gaps and scan again.
    static let maximumGapPasses = 3

    /// Sequence numbers no segment holds any more (a deleted file, or an
    /// empty segment that is not the newest): salvage writes an empty
    /// placeholder segment covering `from..<to`, as compaction does for an
    /// emptied run, replacing the empty segment if there is one.
    private struct Gap {
        var from: UInt64
        var to: UInt64
        var replacing: (salt: UInt64, name: String)?
    }

    private struct DamagedSegment {
        var candidate: Candidate
        var header: SegmentHeader?
        var offset: Int64
        var reason: String
        /// Records below this sequence overlap the previous segment and are dropped.
        var minimumSequence: UInt64? = nil
        var analysis: SegmentAnalysis? = nil
        var name: String { candidate.path.lastComponent?.string ?? candidate.path.string }
    }

    private func finishSwap(_ intent: CompactionIntent, segments: [UInt64: Candidate]) throws(OutboxLogError) {
        var salts: [UInt64: UInt64?] = [:]
        // updateValue, not a subscript: assigning a nil salt (an unreadable
        // header) through the subscript would remove the key, and the swap
        // would then skip that input instead of moving it aside.
        for (base, candidate) in segments { salts.updateValue((try? candidate.header.get())?.salt, forKey: base) }
        try swap.finish(intent, segmentSalts: salts)
    }

    /// Rewrites each damaged segment with its intact records and moves the
    /// original into `damaged/`, through the same committed swap compaction
    /// uses, so a crash midway is finished by the next open.
    private func salvage(
        _ damaged: [DamagedSegment], gaps: [Gap], ordered: [Candidate], highestSequence: UInt64,
        report: inout RecoveryReport
    ) throws(OutboxLogError) {
        var inputs: [CompactionIntent.SegmentIdentity] = []
        var outputs: [CompactionIntent.SegmentIdentity] = []
        for gap in gaps {
            if let replaced = gap.replacing {
                inputs.append(.init(base: gap.from, salt: replaced.salt))
                report.quarantinedFiles.append(replaced.name)
            }
            let placeholder = SegmentHeader(baseSequence: gap.from, coverEnd: gap.to, salt: UInt64.random(in: 1...UInt64.max))
            let descriptor = try fileSystem.createFile(
                at: layout.compactingSegmentFile(base: gap.from), contents: placeholder.encoded())
            try? fileSystem.close(descriptor)
            outputs.append(.init(base: gap.from, salt: placeholder.salt))
            logger.error(
                "salvage marked missing records as lost",
                metadata: ["sequences": "\(gap.from)..<\(gap.to)"])
        }
        for segment in damaged {
            inputs.append(.init(base: segment.candidate.base, salt: segment.header?.salt ?? 0))
            report.quarantinedFiles.append(segment.name)
            guard let header = segment.header else {
                report.skipped.append(
                    .init(file: segment.name, offset: 0, bytes: segment.candidate.size, reason: segment.reason))
                // Nothing in it can be trusted, not even its range: the file
                // name says where it starts, the next segment where it ends.
                // An empty placeholder keeps that range accounted for.
                let position = ordered.firstIndex { $0.base == segment.candidate.base }!
                let base = segment.minimumSequence ?? segment.candidate.base
                let coverEnd = position + 1 < ordered.count ? ordered[position + 1].base : highestSequence + 1
                if coverEnd > base {
                    let placeholder = SegmentHeader(
                        baseSequence: base, coverEnd: coverEnd, salt: UInt64.random(in: 1...UInt64.max))
                    let descriptor = try fileSystem.createFile(
                        at: layout.compactingSegmentFile(base: base), contents: placeholder.encoded())
                    try? fileSystem.close(descriptor)
                    outputs.append(.init(base: base, salt: placeholder.salt))
                }
                continue
            }
            // Collect every intact record, past all damage.
            var kept: [ScannedRecord] = []
            let reader = ChunkedFileReader(
                fileSystem: fileSystem, descriptor: segment.candidate.descriptor, path: segment.candidate.path,
                fileSize: segment.candidate.size)
            let scanner = SegmentScanner(reader: reader, header: header)
            let minimum = segment.minimumSequence ?? 0
            let analysis = try SegmentAnalysis.analyze(
                scanner, file: segment.name,
                visit: { if $0.sequence >= minimum { kept.append($0) } },
                visitLater: { if $0.sequence >= minimum { kept.append($0) } })
            report.skipped += analysis.damage?.skipped ?? []
            if minimum > 0 {
                report.skipped.append(.init(file: segment.name, offset: 0, bytes: 0, reason: segment.reason))
            }
            let position = ordered.firstIndex { $0.base == segment.candidate.base }!
            let ownHighest = max(kept.last?.sequence ?? 0, analysis.damage?.highestSequenceAfter ?? 0)
            let coverEnd =
                position + 1 < ordered.count ? ordered[position + 1].base : max(highestSequence, ownHighest) + 1
            let base = max(header.baseSequence, minimum)
            // Records outside the range this file holds in the log (a file
            // copied from elsewhere in the log under another name) are not
            // this position's history: keeping them would break the next scan.
            let inRange = kept.filter { $0.sequence >= base && $0.sequence < coverEnd }
            if inRange.count < kept.count {
                report.skipped.append(
                    .init(
                        file: segment.name, offset: 0, bytes: 0,
                        reason: "\(kept.count - inRange.count) record(s) outside the segment's range \(base)..<\(max(coverEnd, base))"))
            }
            // Nothing of the log's history is left in it (its whole range
            // belongs to its neighbours): no output, or one named after the
            // next segment would replace that segment.
            guard coverEnd > base else { continue }
            let output = SegmentHeader(baseSequence: base, coverEnd: coverEnd, salt: UInt64.random(in: 1...UInt64.max))
            var bytes = output.encoded()
            for record in inRange {
                let frame = try reader.window(at: record.offset, count: record.length)
                if let reason = RecordFrame.reverify(frame, crcSeed: header.recordCRCSeed, sequence: record.sequence) {
                    // Its bytes changed since the scan: damaged, like the rest.
                    report.skipped.append(
                        .init(
                            file: segment.name, offset: record.offset, bytes: Int64(record.length),
                            reason: "record no longer verifies when copied: \(reason)"))
                    continue
                }
                let start = bytes.count
                bytes.append(contentsOf: frame)
                bytes.withUnsafeMutableBytes { raw in
                    RecordFrame.reseal(UnsafeMutableRawBufferPointer(rebasing: raw[start...]), crcSeed: output.recordCRCSeed)
                }
            }
            let descriptor = try fileSystem.createFile(at: layout.compactingSegmentFile(base: base), contents: bytes)
            try? fileSystem.close(descriptor)
            outputs.append(.init(base: base, salt: output.salt))
            logger.error(
                "salvaged a damaged segment",
                metadata: ["file": "\(segment.name)", "kept": "\(kept.count)", "reason": "\(segment.reason)"])
        }
        let intent = CompactionIntent(inputs: inputs, outputs: outputs, quarantineInputs: true)
        // A failure after the commit point leaves the intent (and the
        // outputs) for the next open to finish: the open fails either way.
        var committed = false
        try swap.commit(intent, committed: &committed)
        var salts: [UInt64: UInt64?] = [:]
        for candidate in ordered { salts.updateValue((try? candidate.header.get())?.salt, forKey: candidate.base) }
        try swap.finish(intent, segmentSalts: salts)
    }

    /// Cuts the torn tail of the newest segment and syncs the cut. Appends
    /// then go to a new segment with a fresh salt, so bytes of the cut tail
    /// can never resurface as records; a segment left empty is deleted.
    private func cutTornTail(
        _ candidate: Candidate, at offset: Int64, emptied: Bool, rewritingFrom unproven: Int64?,
        files: inout [SegmentFile], index: inout LogIndex
    ) throws(OutboxLogError) {
        if emptied {
            if let last = files.popLast() { index.usage[last.id] = nil }
            try swap.remove(candidate.path)
            try fileSystem.syncDirectory(layout.directory)
            return
        }
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(candidate.path, mode: .readWrite) } catch {
            throw .io("cannot cut the torn tail", error, file: candidate.path, offset: offset)
        }
        defer { try? fileSystem.close(descriptor) }
        do { try fileSystem.truncate(descriptor, to: offset) } catch {
            throw .io("cannot cut the torn tail", error, file: candidate.path, offset: offset)
        }
        if let unproven, unproven < offset { try rewrite(descriptor, path: candidate.path, from: unproven, to: offset) }
        do { try fileSystem.synchronize(descriptor) } catch {
            throw .io("cannot sync the cut segment", error, file: candidate.path, offset: offset)
        }
    }

    /// Writes bytes `from..<end` of the newest segment again, unchanged,
    /// before the sync that makes recovered records durable.
    ///
    /// Records that no durable watermark vouches for may have been read
    /// from the page cache without being on disk: after a failed `fsync`,
    /// Linux keeps the unwritten pages readable but marks them clean, so a
    /// later `fsync` — by the next process, say, after the app was killed —
    /// succeeds without writing them (PostgreSQL's "fsyncgate"). Writing the
    /// bytes again dirties the pages, so the sync that follows really
    /// flushes them, or fails. Only the newest segment can hold such
    /// records: every other segment was synced before the next one existed.
    private func rewrite(_ descriptor: FileDescriptor, path: FilePath, from: Int64, to end: Int64) throws(OutboxLogError) {
        let chunk: Int64 = 1 << 20
        var offset = from
        while offset < end {
            let count = Int(min(chunk, end - offset))
            do throws(Errno) {
                let bytes = try fileSystem.readBytes(descriptor, count: count, at: offset)
                guard bytes.count == count else { throw Errno.ioError }
                try fileSystem.writeFully(descriptor, bytes, at: offset)
            } catch {
                throw .io("cannot rewrite unsynced records", error, file: path, offset: offset)
            }
            offset += Int64(count)
        }
        logger.debug("rewrote records no watermark vouches for", metadata: ["file": "\(path)", "bytes": "\(end - from)"])
    }
}
