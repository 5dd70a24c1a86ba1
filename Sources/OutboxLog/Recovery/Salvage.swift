import Logging
import SystemPackage

/// A segment the chain could not take as it is.
struct DamagedSegment {
    var candidate: SegmentCandidate
    /// `nil` if the header is unreadable (or names another base).
    var header: SegmentHeader?
    var offset: Int64
    var damage: LogDamage
    /// Records below this sequence overlap the previous segment and are dropped.
    var minimumSequence: UInt64? = nil
    var analysis: SegmentAnalysis? = nil
    var name: String { candidate.name }
}

/// Sequence numbers no segment holds any more (a deleted file, or an empty
/// segment that is not the newest): salvage writes an empty placeholder
/// segment covering `from..<to`, as compaction does for an emptied run,
/// replacing the empty segment if there is one.
struct SequenceGap {
    var from: UInt64
    var to: UInt64
    var replacing: (salt: UInt64, name: String)?
}

/// Recovery, step 4 (salvage mode only): each damaged segment is rewritten
/// with its intact records — every one verified again as it is copied — and
/// the original moved into `damaged/`; each gap gets an empty placeholder
/// that records the lost range. All of it goes through the committed swap
/// compaction uses, so a crash midway is finished by the next open, which
/// then scans the repaired log again.
///
/// Every output keeps the range of sequence numbers its input held, so the
/// log's sequence floor (see Docs/FORMAT.md) survives salvage too.
struct Salvage {
    let layout: DirectoryLayout
    let fileSystem: any FileSystem
    let logger: Logger

    func run(
        _ damaged: [DamagedSegment], gaps: [SequenceGap], ordered: [SegmentCandidate], highestSequence: UInt64,
        report: inout RecoveryReport
    ) throws(OutboxLogError) {
        var inputs: [CompactionIntent.SegmentIdentity] = []
        var outputs: [CompactionIntent.SegmentIdentity] = []
        for gap in gaps {
            if let replaced = gap.replacing {
                inputs.append(.init(base: gap.from, salt: replaced.salt))
                report.setAsideFiles.append(replaced.name)
            }
            outputs.append(try placeholder(covering: gap.from..<gap.to))
            logger.error("salvage marked missing records as lost", metadata: ["sequences": "\(gap.from)..<\(gap.to)"])
        }
        for segment in damaged {
            inputs.append(.init(base: segment.candidate.base, salt: segment.header?.salt ?? 0))
            report.setAsideFiles.append(segment.name)
            let position = ordered.firstIndex { $0.base == segment.candidate.base }!
            let isNewest = position + 1 == ordered.count
            let nextBase = isNewest ? nil : ordered[position + 1].base
            guard let header = segment.header else {
                report.skipped.append(
                    .init(file: segment.name, offset: 0, bytes: segment.candidate.size, damage: segment.damage))
                // Nothing in it can be trusted, not even its range: the file
                // name says where it starts, the next segment where it ends.
                // An empty placeholder keeps that range accounted for (and,
                // for the newest, the sequence floor).
                let base = segment.minimumSequence ?? segment.candidate.base
                let coverEnd = nextBase ?? max(highestSequence + 1, base)
                if coverEnd > base || isNewest { outputs.append(try placeholder(covering: base..<coverEnd)) }
                continue
            }
            if let output = try rewrite(segment, header, nextBase: nextBase, highestSequence: highestSequence, report: &report) {
                outputs.append(output)
            }
        }
        let intent = CompactionIntent(inputs: inputs, outputs: outputs, setAsideInputs: true)
        // A failure after the commit point leaves the intent (and the
        // outputs) for the next open to finish: the open fails either way.
        let swap = SegmentSwap(layout: layout, fileSystem: fileSystem)
        var committed = false
        try swap.commit(intent, committed: &committed)
        var salts: [UInt64: UInt64?] = [:]
        for candidate in ordered { salts.updateValue(candidate.salt, forKey: candidate.base) }
        try swap.finish(intent, segmentSalts: salts)
    }

    /// Collects every intact record of a damaged segment, past all damage,
    /// into a rewritten segment covering the range it holds in the log.
    private func rewrite(
        _ segment: DamagedSegment, _ header: SegmentHeader, nextBase: UInt64?, highestSequence: UInt64,
        report: inout RecoveryReport
    ) throws(OutboxLogError) -> CompactionIntent.SegmentIdentity? {
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
            report.skipped.append(.init(file: segment.name, offset: 0, bytes: 0, damage: segment.damage))
        }
        let base = max(header.baseSequence, minimum)
        let ownHighest = max(kept.last?.sequence ?? 0, analysis.damage?.highestSequenceAfter ?? 0)
        let coverEnd = nextBase ?? max(max(highestSequence, ownHighest) + 1, base)
        // Records outside the range this file holds in the log (a file
        // copied from elsewhere in the log under another name) are not this
        // position's history: keeping them would break the next scan.
        let inRange = kept.filter { $0.sequence >= base && $0.sequence < coverEnd }
        if inRange.count < kept.count {
            report.skipped.append(
                .init(
                    file: segment.name, offset: 0, bytes: 0,
                    damage: .recordsOutsideSegment(count: kept.count - inRange.count, segment: base..<max(coverEnd, base))))
        }
        // Nothing of the log's history is left in it (its whole range
        // belongs to its neighbours): no output, or one named after the
        // next segment would replace that segment.
        guard coverEnd > base || nextBase == nil else { return nil }
        let output = SegmentHeader(baseSequence: base, coverEnd: coverEnd, salt: UInt64.random(in: 1...UInt64.max))
        var bytes = output.encoded()
        var copied = 0
        for record in inRange {
            let frame = try reader.window(at: record.offset, count: record.length)
            if let damage = RecordFrame.reverify(frame, crcSeed: header.recordCRCSeed, sequence: record.sequence) {
                // Its bytes changed since the scan: damaged, like the rest.
                report.skipped.append(
                    .init(
                        file: segment.name, offset: record.offset, bytes: Int64(record.length),
                        damage: .noLongerVerifies(damage)))
                continue
            }
            let start = bytes.count
            bytes.append(contentsOf: frame)
            bytes.withUnsafeMutableBytes { raw in
                RecordFrame.reseal(UnsafeMutableRawBufferPointer(rebasing: raw[start...]), crcSeed: output.recordCRCSeed)
            }
            copied += 1
        }
        let descriptor = try fileSystem.createFile(at: layout.compactingSegmentFile(base: base), contents: bytes)
        try? fileSystem.close(descriptor)
        logger.error(
            "salvaged a damaged segment",
            metadata: ["file": "\(segment.name)", "kept": "\(copied)", "reason": "\(segment.damage)"])
        return .init(base: base, salt: output.salt)
    }

    /// An empty rewritten segment that carries `range` in the chain.
    private func placeholder(covering range: Range<UInt64>) throws(OutboxLogError) -> CompactionIntent.SegmentIdentity {
        let header = SegmentHeader(
            baseSequence: range.lowerBound, coverEnd: range.upperBound, salt: UInt64.random(in: 1...UInt64.max))
        let descriptor = try fileSystem.createFile(
            at: layout.compactingSegmentFile(base: range.lowerBound), contents: header.encoded())
        try? fileSystem.close(descriptor)
        return .init(base: range.lowerBound, salt: header.salt)
    }
}
