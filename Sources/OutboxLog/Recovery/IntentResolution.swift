import SystemPackage

/// Recovery, step 2: an interrupted compaction or salvage is finished (its
/// intent was committed) or rolled back (it was not), and files that were
/// being created are deleted — or, read-only, only reported.
///
/// The result is the *effective* set of segments: what the log holds once
/// the swap is complete, whichever way it goes.
struct IntentResolution {
    let layout: DirectoryLayout
    let fileSystem: any FileSystem
    let readOnly: Bool
    /// Read-only salvage (`outbox log verify`): a damaged intent is
    /// reported, and the segments are read as they are, instead of failing
    /// the open.
    var reportsDamagedIntent = false

    /// The effective segments, oldest (lowest base) first.
    func resolve(_ inventory: SegmentInventory, report: inout RecoveryReport) throws(OutboxLogError) -> [SegmentCandidate] {
        let intent: CompactionIntent?
        do { intent = try readIntent(present: inventory.hasIntent) } catch {
            guard error.code == .corruption, error.file == layout.intentFile, reportsDamagedIntent, let damage = error.damage
            else { throw error }
            // Whether the compaction committed cannot be known: read the
            // `.seg` files as they are (its outputs not yet renamed are
            // ignored), and let the scan report the overlaps or gaps.
            let size = (try? fileSystem.readWholeFile(layout.intentFile).count).map(Int64.init) ?? 0
            report.skipped.append(
                .init(
                    file: DirectoryLayout.intentName, offset: 0, bytes: size,
                    damage: damage))
            report.removedTemporaryFiles = inventory.temporaries
            return inventory.segments.values.sorted { $0.base < $1.base }
        }
        var effective = inventory.segments
        if let intent {
            // The inputs are gone (unless an output took an input's name)…
            let outputSalts = Set(intent.outputs.map(\.salt))
            for input in intent.inputs {
                if let existing = effective[input.base], !outputSalts.contains(existing.salt ?? 0) {
                    effective[input.base] = nil
                }
            }
            // …and every output is in place, renamed or about to be.
            for output in intent.outputs {
                if let pending = inventory.compacting[output.base], pending.salt == output.salt {
                    effective[output.base] = pending
                } else if effective[output.base]?.salt != output.salt {
                    throw .corruption(
                        "a committed compaction's output is missing", file: layout.segmentFile(base: output.base))
                }
            }
        }

        if readOnly {
            if intent != nil {
                report.interruptedCompaction = .completed
            } else if !inventory.compacting.isEmpty {
                report.interruptedCompaction = .rolledBack
            }
            report.removedTemporaryFiles = inventory.temporaries
        } else {
            let swap = SegmentSwap(layout: layout, fileSystem: fileSystem)
            if let intent {
                try swap.finish(intent, segmentSalts: inventory.segmentSalts)
                report.interruptedCompaction = .completed
                for base in intent.outputs.map(\.base) {
                    // Its descriptor stays valid across the rename; record the final name.
                    effective[base]?.path = layout.segmentFile(base: base)
                }
            } else if !inventory.compacting.isEmpty {
                for base in inventory.compacting.keys.sorted() { try swap.remove(layout.compactingSegmentFile(base: base)) }
                report.interruptedCompaction = .rolledBack
            }
            for name in inventory.temporaries {
                try swap.remove(layout.directory.appending(name))
                report.removedTemporaryFiles.append(name)
            }
            if intent != nil || !inventory.compacting.isEmpty || !inventory.temporaries.isEmpty {
                try fileSystem.syncDirectory(layout.directory)
            }
        }
        return effective.values.sorted { $0.base < $1.base }
    }

    private func readIntent(present: Bool) throws(OutboxLogError) -> CompactionIntent? {
        guard present else { return nil }
        switch CompactionIntent.decode(try fileSystem.readWholeFile(layout.intentFile)) {
        case .success(let intent):
            return intent
        case .failure(.unsupportedVersion(let version)):
            throw OutboxLogError(
                .unsupportedFormat, "compaction record format version \(version) is unknown", file: layout.intentFile)
        case .failure(.corrupt(let problem)):
            let damage = LogDamage.compactionIntent(problem)
            throw OutboxLogError(.corruption, "\(damage)", file: layout.intentFile, offset: 0, damage: damage)
        }
    }
}
