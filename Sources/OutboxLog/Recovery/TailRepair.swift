import Logging
import SystemPackage

/// Recovery, step 5: the newest segment is made safe to append after.
///
/// - A torn tail is cut. If records before the cut are not vouched for by
///   a durable watermark, the kept part is copied to a new file that
///   replaces the segment (see ``SegmentReplacement``); otherwise the file
///   is truncated in place. Appends then go to a new segment with a fresh
///   salt, so bytes of the cut tail can never resurface as records.
/// - A newest segment emptied by its torn tail is replaced by an empty
///   segment of the same base (and a fresh salt) that takes the appends:
///   deleting it would lose the log's sequence floor.
/// - An intact newest segment takes the appends. It is made durable first,
///   through a copy if some of its records are not vouched for, so every
///   recovered record is on stable storage before a new record's watermark
///   can claim so.
///
/// Recovery never writes over records it found in place: a write that is
/// torn by a power loss may take whole sectors with it, records it was not
/// meant to touch included.
struct TailRepair {
    let layout: DirectoryLayout
    let configuration: OutboxLog.Configuration
    var fileSystem: any FileSystem { configuration.fileSystem }
    var logger: Logger { configuration.logger }

    /// Where appends continue, and what a read-only open must not read.
    struct Outcome {
        var active: SegmentFile?
        var activeSize: Int64 = 0
        /// Read-only: where each segment's readable records end (a torn tail left in place).
        var readableEnds: [UInt32: Int64] = [:]
    }

    func run(_ scan: inout SegmentChain.Scan, report: inout RecoveryReport) throws(OutboxLogError) -> Outcome {
        var outcome = Outcome()
        if let torn = scan.tornTail, let damage = torn.analysis.damage {
            let name = torn.candidate.name
            report.truncatedTail = .init(
                file: name, offset: damage.offset, bytes: torn.candidate.size - damage.offset, damage: damage.damage,
                unreachableRecords: damage.dataRecordsAfter)
            let metadata: Logger.Metadata = [
                "file": "\(name)", "offset": "\(damage.offset)", "bytes": "\(torn.candidate.size - damage.offset)",
            ]
            if configuration.readOnly {
                outcome.readableEnds[torn.id] = damage.offset
                logger.info("found a torn tail (read-only: left in place)", metadata: metadata)
            } else {
                try cut(torn, at: damage.offset, unprovenFrom: scan.newestUnprovenFrom, scan: &scan, outcome: &outcome)
                logger.warning("cut a torn tail", metadata: metadata)
            }
        } else if configuration.readOnly, let newest = scan.files.last, let zeroTail = scan.newestZeroTailFrom {
            // Records end where the space allocated ahead begins.
            outcome.readableEnds[newest.id] = zeroTail
        } else if let newest = scan.files.last, newest.header.coverEnd == nil, !configuration.readOnly,
            let candidate = scan.candidates[newest.id]
        {
            // Space allocated ahead and never written is cut too; the
            // writer allocates ahead again.
            var end = scan.newestZeroTailFrom ?? candidate.size
            let descriptor: FileDescriptor
            if scan.newestUnprovenFrom != nil, scan.newestUnprovenMarkers == nil {
                descriptor = try replacement.replace(
                    candidate, header: newest.header, keepingUpTo: end, expecting: scan.newestLeadingRun!)
            } else {
                if let unproven = scan.newestUnprovenFrom {
                    // Only markers: cut them (the open writes a new one).
                    scan.forgetUnprovenMarkers(of: newest.id)
                    end = unproven
                }
                descriptor = try openSynced(newest.path, cuttingAt: end < candidate.size ? end : nil)
            }
            outcome.active = scan.replaceFile(of: newest.id, with: descriptor, fileSystem: fileSystem)
            outcome.activeSize = end
        }
        return outcome
    }

    private var replacement: SegmentReplacement { SegmentReplacement(layout: layout, fileSystem: fileSystem, logger: logger) }

    private func cut(
        _ torn: SegmentChain.TornTail, at offset: Int64, unprovenFrom unproven: Int64?, scan: inout SegmentChain.Scan,
        outcome: inout Outcome
    ) throws(OutboxLogError) {
        let header = torn.candidate.usableHeader!
        if torn.analysis.leading.records == 0 {
            // Nothing before the cut. The segment's base is the floor of
            // every sequence number to come: keep it, in a fresh segment.
            let fresh = SegmentHeader(baseSequence: header.baseSequence, coverEnd: nil, salt: UInt64.random(in: 1...UInt64.max))
            let descriptor = try fileSystem.createSegment(fresh, layout: layout)
            outcome.active = scan.replaceFile(of: torn.id, with: descriptor, header: fresh, fileSystem: fileSystem)
            outcome.activeSize = Int64(SegmentHeader.size)
            return
        }
        var cut = offset
        if let unproven, unproven < offset {
            guard scan.newestUnprovenMarkers != nil else {
                let descriptor = try replacement.replace(
                    torn.candidate, header: header, keepingUpTo: offset, expecting: torn.analysis.leading)
                _ = scan.replaceFile(of: torn.id, with: descriptor, fileSystem: fileSystem)
                return
            }
            // Only markers before the cut are not vouched for: cut them too.
            scan.forgetUnprovenMarkers(of: torn.id)
            cut = unproven
        }
        // Every record before the cut was vouched for: cutting is enough.
        // A failed cut fails the open (only the close may fail unheard:
        // `try?` around both once swallowed the cut's error, and the open
        // sealed the torn bytes behind a new segment).
        let descriptor = try openSynced(torn.candidate.path, cuttingAt: cut)
        try? fileSystem.close(descriptor)
    }

    /// The newest segment, opened for writing, cut at `cut` if given, and
    /// synced: every record left in it is vouched for by a watermark, but
    /// a sync by this process makes sure (and makes the cut durable).
    private func openSynced(_ path: FilePath, cuttingAt cut: Int64?) throws(OutboxLogError) -> FileDescriptor {
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readWrite) } catch {
            throw .io("cannot reopen the newest segment", error, file: path)
        }
        do throws(OutboxLogError) {
            if let cut {
                do { try fileSystem.truncate(descriptor, to: cut) } catch {
                    throw .io("cannot cut the newest segment", error, file: path, offset: cut)
                }
            }
            do { try fileSystem.synchronize(descriptor) } catch {
                throw .io("cannot sync the newest segment", error, file: path, offset: cut)
            }
        } catch {
            try? fileSystem.close(descriptor)
            throw error
        }
        return descriptor
    }
}

extension SegmentChain.Scan {
    /// Forgets the unproven markers at the end of segment `id`, about to be
    /// cut: their bytes, their sequence numbers (the newest ones; markers
    /// are the engine's own, never handed to a caller, and appends to the
    /// segment must continue from its last record), and the claim that the
    /// log ends with a marker (the open then writes a new one).
    mutating func forgetUnprovenMarkers(of id: UInt32) {
        guard let count = newestUnprovenMarkers, count > 0 else { return }
        let bytes = Int64(count * RecordFrame.headerSize)
        index.usage[id, default: SegmentUsage()].totalBytes -= bytes
        index.usage[id, default: SegmentUsage()].markerBytes -= bytes
        index.usage[id, default: SegmentUsage()].records -= count
        highestSequence -= UInt64(count)
        endsWithMarker = false
        newestUnprovenMarkers = 0
    }

    /// Puts a ``SegmentFile`` on `descriptor` in place of segment `id`'s
    /// (same id, so index locations stay valid); returns it.
    mutating func replaceFile(
        of id: UInt32, with descriptor: FileDescriptor, header: SegmentHeader? = nil, fileSystem: any FileSystem
    ) -> SegmentFile {
        let position = files.firstIndex { $0.id == id }!
        let old = files[position]
        let file = SegmentFile(
            id: id, header: header ?? old.header, path: old.path, descriptor: descriptor, fileSystem: fileSystem)
        files[position] = file
        return file
    }
}
