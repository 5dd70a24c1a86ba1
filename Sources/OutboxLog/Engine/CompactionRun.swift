import Foundation

/// One compaction's run of sealed segments: chosen under the log's lock,
/// copied without it, and swapped into the index under it again.
struct CompactionRun {
    struct Input {
        var file: SegmentFile
        var usage: SegmentUsage
        var size: Int64
    }

    /// A live record copied from `from` to `to`.
    struct Move {
        var key: LogKey
        var kind: FrameKind
        var from: Location
        var to: Location
        var expiry: Int64?
    }

    var inputs: [Input]
    /// The sequence number the first segment after the run starts at (or
    /// the next to be assigned): the outputs cover the run's range up to it.
    var coverEnd: UInt64
    /// The run starts at the oldest segment.
    var atStart: Bool
    /// A segment on disk follows the run.
    var followedOnDisk: Bool

    /// An empty run in the middle of the log still needs a segment to carry
    /// its sequence range, or the next open would see a gap; and one that no
    /// segment on disk follows carries the sequence floor (Docs/FORMAT.md),
    /// or a crash could restart the numbers.
    var needsPlaceholder: Bool { !atStart || !followedOnDisk }

    /// Every sealed segment from the first that holds dead bytes to the
    /// newest sealed one whose bytes are all written; `nil` if there is none.
    static func plan(in state: LogState) -> CompactionRun? {
        let sealed = state.order.filter { $0 != state.activeID }
        guard let first = sealed.firstIndex(where: { !(state.index.usage[$0] ?? SegmentUsage()).isClean }) else {
            return nil
        }
        var inputs: [Input] = []
        for id in sealed[first...] {
            guard let slot = state.slots[id], let file = slot.file else { break }
            let usage = state.index.usage[id] ?? SegmentUsage()
            let size = Int64(SegmentHeader.size) + usage.totalBytes
            // A segment sealed by a roll at append time may still have
            // bytes waiting for the writer (buffered appends): the run
            // ends before it, or the copy would read past its end.
            guard slot.writtenSize >= size else { break }
            inputs.append(Input(file: file, usage: usage, size: size))
        }
        guard let last = inputs.last, let lastInput = state.order.firstIndex(of: last.file.id) else { return nil }
        let follower = lastInput + 1 < state.order.count ? state.slots[state.order[lastInput + 1]] : nil
        return CompactionRun(
            inputs: inputs, coverEnd: follower?.header.baseSequence ?? state.nextSequence,
            atStart: first == 0 && sealed.first == state.order.first, followedOnDisk: follower?.file != nil)
    }

    /// The intent that swaps the run's inputs for `outputs`.
    func intent(outputs: [CompactionOutputWriter.Output]) -> CompactionIntent {
        CompactionIntent(
            inputs: inputs.map { .init(base: $0.file.header.baseSequence, salt: $0.file.header.salt) },
            outputs: outputs.map { .init(base: $0.header.baseSequence, salt: $0.header.salt) },
            setAsideInputs: false)
    }

    /// Each input's salt by its base sequence, for finishing the swap.
    var inputSalts: [UInt64: UInt64?] {
        var salts: [UInt64: UInt64?] = [:]
        for input in inputs { salts[input.file.header.baseSequence] = input.file.header.salt }
        return salts
    }

    /// Under the lock, once the intent is committed: the index follows the
    /// copies — an entry moves only if it still points at the original (a
    /// record superseded meanwhile stays dead) — and the outputs take the
    /// inputs' place in the segment order.
    func swapIn(_ outputs: [CompactionOutputWriter.Output], moved: [Move], state: inout LogState) {
        for item in moved {
            // Every copy counts for retention, live or superseded
            // meanwhile: its bytes are in the output either way.
            state.index.usage[item.to.segment, default: SegmentUsage()].count(expiry: item.expiry)
            guard var entry = state.index.entries[item.key] else { continue }
            switch item.kind {
            case .value where entry.value == item.from: entry.value = item.to
            case .annotation where entry.annotation == item.from: entry.annotation = item.to
            default: continue
            }
            state.index.entries[item.key] = entry
            state.index.usage[item.to.segment, default: SegmentUsage()].liveBytes += Int64(item.to.length)
            state.index.usage[item.to.segment, default: SegmentUsage()].liveRecords += 1
        }
        for output in outputs {
            state.index.usage[output.id, default: SegmentUsage()].totalBytes = output.size - Int64(SegmentHeader.size)
            state.index.usage[output.id, default: SegmentUsage()].records = output.records
            state.slots[output.id] = SegmentSlot(header: output.header, file: output.file, writtenSize: .max)
        }
        let inputIDs = Set(inputs.map(\.file.id))
        for id in inputIDs {
            state.slots[id] = nil
            state.index.usage[id] = nil
        }
        let at = state.order.firstIndex(of: inputs[0].file.id) ?? state.order.count
        state.order.removeAll { inputIDs.contains($0) }
        state.order.insert(contentsOf: outputs.map(\.id), at: at)
        state.compactions += 1
    }
}

extension LogCore {
    /// Scans one input segment and copies each record the index still
    /// points at into the output.
    func copyLiveRecords(
        of input: CompactionRun.Input, into writer: inout CompactionOutputWriter, moved: inout [CompactionRun.Move]
    ) throws(OutboxLogError) {
        let file = input.file
        let reader = ChunkedFileReader(
            fileSystem: fileSystem, descriptor: file.descriptor, path: file.path, fileSize: input.size)
        let scanner = SegmentScanner(reader: reader, header: file.header)
        var batch: [ScannedRecord] = []
        var failure: OutboxLogError?
        func drain() {
            guard failure == nil, !batch.isEmpty else { return }
            let live = state.withLock { state in
                batch.filter { record in
                    state.index.isLive(
                        record.kind, key: record.key,
                        at: Location(segment: file.id, offset: UInt32(record.offset), length: UInt32(record.length)))
                }
            }
            do throws(OutboxLogError) {
                for record in live {
                    let frame = try reader.window(at: record.offset, count: record.length)
                    if let damage = RecordFrame.reverify(frame, crcSeed: file.crcSeed, sequence: record.sequence) {
                        throw OutboxLogError.corruption(
                            "a live record no longer verifies when copied (\(damage)); the compaction stopped",
                            file: file.path, offset: record.offset, damage: .noLongerVerifies(damage))
                    }
                    let to = try writer.append(frame: frame, sequence: record.sequence)
                    moved.append(
                        CompactionRun.Move(
                            key: record.key, kind: record.kind,
                            from: Location(segment: file.id, offset: UInt32(record.offset), length: UInt32(record.length)),
                            to: to, expiry: record.expiry))
                }
            } catch {
                failure = error
            }
            batch.removeAll(keepingCapacity: true)
        }
        let run = try scanner.scanRun(
            from: Int64(SegmentHeader.size), previous: nil, resumingAfterDamage: false,
            visit: { record in
                guard record.kind == .value || record.kind == .annotation else { return }
                batch.append(record)
                if batch.count >= 512 { drain() }
            })
        drain()
        if let failure { throw failure }
        if let stop = run.stop {
            throw .corruption(
                "segment no longer verifies: \(stop.damage)", file: file.path, offset: stop.frame, damage: stop.damage)
        }
    }
}
