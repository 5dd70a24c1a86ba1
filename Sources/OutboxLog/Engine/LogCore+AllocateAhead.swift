import SystemPackage

/// Space allocated ahead (``OutboxLog/Configuration/preallocation``): the
/// writer zero-fills the active segment ahead of its records so that a
/// durable append *overwrites* allocated bytes and its `fdatasync` has no
/// file size and no block allocation to commit.
///
/// Zeros are written, not `fallocate(2)`d: on ext4 a `fallocate`d extent is
/// "unwritten", and the first write into each of its blocks converts it —
/// a metadata change that the next `fdatasync` must journal, which is what
/// preallocation is meant to avoid. Written zeros are plain data, on every
/// file system and on Apple platforms alike.
///
/// The zero-fill runs inside the writer's own work, after the group's
/// records are written and before its sync, when the zeros ahead of the
/// records are down to a quarter of `preallocation`: the same calls in the
/// same order for the same appends (the torture suite's simulated modes
/// replay them), never concurrent with a write in place (the writer holds
/// the write token), and the group's sync carries the zeros too.
///
/// Zeros are only ever written past every record written so far. Recovery
/// reads zero bytes after the newest segment's last record, to the end of
/// the file, as space allocated ahead and never written (Docs/FORMAT.md,
/// "Space allocated ahead"); the writer cuts them off before it seals a
/// segment, so no other segment ends in zeros.
///
/// A zero-fill that fails (`ENOSPC`, `EIO`) changes nothing but speed: the
/// group's records are already written, a failed write of zeros past them
/// can only have written zeros, and the group's sync still decides whether
/// they are durable. So the group goes on and the writer stops allocating
/// ahead in that segment (the next segment tries again): a full disk fails
/// the appends that need the space, with their own error, not the ones that
/// merely could not be given room in advance.
struct AllocatedAhead {
    /// The segment zero-filled, and where its zeros end.
    var segment: UInt32?
    var end: Int64 = 0
    /// Zero-filling failed in `segment`: do not try again there. The
    /// failed write may have left zeros past `end`.
    var failed = false
}

extension LogCore {
    /// Zero bytes for zero-filling, shared.
    private static let zeros = [UInt8](repeating: 0, count: 64 << 10)

    /// Zero-fills `file` ahead of its records if it is due: the zeros ahead
    /// of `dataEnd` (where this work's records end) are down to a quarter
    /// of ``OutboxLog/Configuration/preallocation``. Call on the writer
    /// thread, holding the write token.
    func allocateAhead(in file: SegmentFile, dataEnd: Int64, _ allocated: inout AllocatedAhead) {
        let step = Int64(configuration.preallocation)
        guard step > 0 else { return }
        if allocated.segment != file.id { allocated = AllocatedAhead(segment: file.id) }
        let limit = Int64(configuration.segmentSize)
        guard !allocated.failed, allocated.end - dataEnd < step / 4, max(allocated.end, dataEnd) < limit else { return }
        // Never write zeros over a record: start past every byte written,
        // in place by a caller too.
        let written = max(dataEnd, state.withLock { $0.slots[file.id]?.writtenSize } ?? 0)
        var position = max(allocated.end, written)
        let to = min(limit, written + step)
        while position < to {
            let count = Int(min(Int64(Self.zeros.count), to - position))
            let outcome = Self.zeros.withUnsafeBytes { zeros -> Result<Void, Errno> in
                do throws(Errno) {
                    try fileSystem.writeFully(file.descriptor, UnsafeRawBufferPointer(rebasing: zeros[..<count]), at: position)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            if case .failure(let error) = outcome {
                allocated.failed = true
                logger.warning(
                    "cannot allocate space ahead in the active segment; appends go on without it",
                    metadata: ["file": "\(file.path)", "offset": "\(position)", "error": "\(error)"])
                break
            }
            position += Int64(count)
        }
        allocated.end = max(allocated.end, position)
    }

    /// Cuts the zeros allocated ahead off `file` before it is sealed (or
    /// closed): its records end at `end`, or at its written size if this
    /// work wrote nothing to it. Nothing to do for a segment this writer
    /// never zero-filled (recovery cut any zeros a previous run left).
    func trimAllocatedAhead(_ file: SegmentFile, writtenUpTo end: Int64?, _ allocated: AllocatedAhead) throws(OutboxLogError) {
        guard allocated.segment == file.id, allocated.end > 0 || allocated.failed else { return }
        guard let end = end ?? state.withLock({ $0.slots[file.id]?.writtenSize }) else { return }
        let size: Int64
        do { size = try fileSystem.size(of: file.descriptor) } catch {
            throw .io("cannot read the size of the segment", error, file: file.path)
        }
        guard size > end else { return }
        do { try fileSystem.truncate(file.descriptor, to: end) } catch {
            throw .io("cannot cut the space allocated ahead off the segment before sealing it", error, file: file.path, offset: end)
        }
    }
}
