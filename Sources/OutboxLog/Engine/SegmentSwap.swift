import SystemPackage

/// Replaces segments crash-safely: the commit protocol shared by compaction
/// and salvage.
///
/// 1. The outputs are written under `.compacting` names and synced.
/// 2. ``commit(_:)``: the intent (inputs and outputs, each by base and salt)
///    is written to `COMPACTION.tmp`, synced, renamed to `COMPACTION`, and
///    the directory synced. This rename is the commit point.
/// 3. ``finish(_:segmentSalts:)``: inputs are deleted (or moved to
///    `damaged/`), outputs renamed into place, the directory synced, the
///    intent removed, the directory synced again.
///
/// A crash before step 2 completes leaves no intent: recovery deletes the
/// `.compacting` files and the inputs are untouched. A crash after it leaves
/// the intent: recovery runs step 3 again, which is idempotent because each
/// file is recognised by its salt.
struct SegmentSwap {
    let layout: DirectoryLayout
    let fileSystem: any FileSystem

    func remove(_ path: FilePath) throws(OutboxLogError) {
        do { try fileSystem.removeFile(path) } catch where error == .noSuchFileOrDirectory && !exists(path) {} catch {
            throw .io("cannot remove", error, file: path)
        }
    }

    /// Whether `path` is there, to tell an `ENOENT` that means "done before
    /// a crash" from one that is an error. Unknown (the check failed) counts
    /// as there: the caller then fails rather than assume.
    private func exists(_ path: FilePath) -> Bool {
        do { return try fileSystem.itemKind(at: path) != nil } catch { return true }
    }

    /// Rolls a committed swap forward: inputs deleted (or moved aside),
    /// outputs renamed into place, then the intent removed. Idempotent.
    ///
    /// `segmentSalts` holds every segment file present, by base, with its
    /// salt, or `nil` if its header is unreadable (fill it with
    /// `updateValue(_:forKey:)`: a subscript assignment of `nil` removes the
    /// key). An input that is absent was handled before a crash.
    func finish(_ intent: CompactionIntent, segmentSalts: [UInt64: UInt64?]) throws(OutboxLogError) {
        let outputSalts = Set(intent.outputs.map(\.salt))
        for input in intent.inputs {
            guard let salt = segmentSalts[input.base] else { continue }
            if let salt, outputSalts.contains(salt) { continue }  // already replaced by an output
            let path = layout.segmentFile(base: input.base)
            if intent.setAsideInputs {
                try moveAside(path)
            } else {
                try remove(path)
            }
        }
        for output in intent.outputs {
            let pending = layout.compactingSegmentFile(base: output.base)
            do {
                try fileSystem.rename(pending, to: layout.segmentFile(base: output.base))
            } catch where error == .noSuchFileOrDirectory && !exists(pending) {
                // Renamed before the crash.
            } catch {
                // ENOENT with the output still there is a failure like any
                // other: taking it for "renamed" would remove the intent
                // with the output under its pending name and its input gone.
                throw .io("cannot rename compaction output into place", error, file: pending)
            }
        }
        try fileSystem.syncDirectory(layout.directory)
        try remove(layout.intentFile)
        try fileSystem.syncDirectory(layout.directory)
    }

    /// Moves a damaged file into `damaged/`, never overwriting an earlier one.
    func moveAside(_ path: FilePath) throws(OutboxLogError) {
        let damagedDirectory = layout.damagedDirectory
        do {
            // Moved before a crash. (Checked first, not taken from an
            // ENOENT: that could come from the sync after the rename too.)
            guard try fileSystem.itemKind(at: path) != nil else { return }
            if try fileSystem.itemKind(at: damagedDirectory) == nil {
                try fileSystem.createDirectory(damagedDirectory)
                try fileSystem.synchronizeDirectory(layout.directory)
            }
            let name = path.lastComponent?.string ?? "segment"
            var target = damagedDirectory.appending(name)
            var suffix = 1
            while try fileSystem.itemKind(at: target) != nil {
                target = damagedDirectory.appending("\(name).\(suffix)")
                suffix += 1
            }
            try fileSystem.rename(path, to: target)
            try fileSystem.synchronizeDirectory(damagedDirectory)
        } catch {
            throw .io("cannot move damaged file aside", error, file: path)
        }
    }

    /// Makes a swap durable: the intent is written, synced and renamed into
    /// place, and the directory synced. After this, the swap will happen.
    ///
    /// `committed` is set as soon as the rename succeeds: a failure after
    /// it (the directory sync) leaves an intent the next open may find, so
    /// the caller must keep the outputs and must not carry on as if the
    /// swap had not happened.
    func commit(_ intent: CompactionIntent, committed: inout Bool) throws(OutboxLogError) {
        try fileSystem.syncDirectory(layout.directory)  // the outputs' names
        let descriptor = try fileSystem.createFile(at: layout.temporaryIntentFile, contents: intent.encoded())
        try? fileSystem.close(descriptor)
        do {
            try fileSystem.rename(layout.temporaryIntentFile, to: layout.intentFile)
        } catch {
            throw .io("cannot commit compaction record", error, file: layout.intentFile)
        }
        committed = true
        try fileSystem.syncDirectory(layout.directory)
    }

}
