/// A change to a file's bytes that has reached the page cache but not yet
/// stable storage. Kept in issue order so a power loss can replay any
/// prefix or subset of them onto the durable image.
enum DataOperation: Sendable {
    case write(offset: Int, bytes: [UInt8])
    case truncate(size: Int)

    /// The file size after applying this operation to a file of `size` bytes.
    func size(after size: Int) -> Int {
        switch self {
        case .write(let offset, let bytes): bytes.isEmpty ? size : max(size, offset + bytes.count)
        case .truncate(let newSize): newSize
        }
    }
}

/// One regular file (an inode): what reads see and what a power loss keeps.
///
/// Invariant, as long as no `synchronize` ever failed on the file:
/// `durable` + `unsynced` replayed in order == `visible`. A failed sync
/// breaks it on purpose (see ``SimulatedFileSystem``'s fsyncgate notes):
/// the dropped operations stay in `visible` only.
///
/// `durable` and `visible` are kept as separate buffers, never assigned to
/// each other, so each is mutated in place: a sync costs the bytes written
/// since the last sync, not the size of the file.
struct FileNode: Sendable {
    /// The page cache: what `read` returns.
    var visible: [UInt8] = []
    /// Stable storage: what survives a power loss.
    var durable: [UInt8] = []
    /// Operations since the last successful sync that may still reach
    /// stable storage, oldest first.
    var unsynced: [DataOperation] = []
    /// Operations dropped by failed syncs since the last power loss, for
    /// reports.
    var droppedByFailedSync = 0

    /// Applies a write or truncate to the page cache and logs it as unsynced.
    mutating func perform(_ operation: DataOperation) {
        operation.apply(to: &visible)
        unsynced.append(operation)
    }

    /// A successful `fdatasync`: everything still unsynced becomes durable.
    mutating func synchronize() {
        for operation in unsynced { operation.apply(to: &durable) }
        unsynced.removeAll()
    }

    /// A failed `fdatasync` on Linux: the kernel marks the dirty pages clean
    /// (so they are never written back) but keeps them in the page cache
    /// (so reads still return them).
    mutating func failSynchronize() {
        droppedByFailedSync += unsynced.count
        unsynced.removeAll()
    }

    /// After a power loss or a direct edit of "the disk": both images equal
    /// `bytes`, nothing pending.
    mutating func reset(to bytes: [UInt8]) {
        visible = bytes
        durable = bytes
        unsynced.removeAll()
        droppedByFailedSync = 0
    }
}

extension DataOperation {
    /// Applies the operation to `bytes`, extending with zeros across holes
    /// as a sparse file reads back.
    func apply(to bytes: inout [UInt8]) {
        switch self {
        case .write(let offset, let data):
            guard !data.isEmpty else { return }
            if offset > bytes.count {
                bytes.append(contentsOf: repeatElement(0, count: offset - bytes.count))
            }
            let overlap = min(data.count, bytes.count - offset)
            if overlap > 0 {
                bytes.withUnsafeMutableBytes { target in
                    data.withUnsafeBytes { source in
                        target.baseAddress!.advanced(by: offset)
                            .copyMemory(from: source.baseAddress!, byteCount: overlap)
                    }
                }
            }
            if overlap < data.count { bytes.append(contentsOf: data[overlap...]) }
        case .truncate(let size):
            if size < bytes.count {
                bytes.removeSubrange(size...)
            } else if size > bytes.count {
                bytes.append(contentsOf: repeatElement(0, count: size - bytes.count))
            }
        }
    }
}
