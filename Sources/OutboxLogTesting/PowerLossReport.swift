import SystemPackage

/// What ``SimulatedFileSystem/simulatePowerLoss(_:seed:)`` did: for each
/// file and directory that existed (or could have come back), which of its
/// unsynced operations landed. Print it when a crash test fails: together
/// with the seed it explains the state the engine had to recover from.
public struct PowerLossReport: Sendable, CustomStringConvertible {
    /// The mode the power loss ran in.
    public let mode: PowerLossMode
    /// The seed it drew from.
    public let seed: UInt64
    /// One entry per regular file, in path order (unnamed files last).
    public let files: [FileOutcome]
    /// One entry per directory other than the root, in path order.
    public let directories: [DirectoryOutcome]
    /// How many descriptors the power loss closed.
    public let descriptorsClosed: Int

    /// What happened to one regular file.
    public struct FileOutcome: Sendable, Hashable {
        /// The file's path before the power loss; if it had no visible name
        /// (unlinked while open, or only durably linked), its durable path;
        /// `nil` if it had neither.
        public let path: FilePath?
        /// Whether the file is still reachable by some name afterwards.
        public let existsAfterward: Bool
        /// Size seen by reads before the power loss.
        public let sizeBefore: Int
        /// Size afterwards (`nil` if the file is gone).
        public let sizeAfter: Int?
        /// Unsynced writes and truncates that were candidates to land.
        public let unsyncedOperations: Int
        /// Indices (into the unsynced operations, in issue order) of those
        /// that landed, whole or torn. Empty if the file is gone.
        public let landedOperations: [Int]
        /// The torn write, in ``PowerLossMode/tearLastWrite``.
        public let tornWrite: TornWrite?
        /// The garbage extension, in ``PowerLossMode/garbageTail``.
        public let garbageTail: GarbageTail?
        /// Writes and truncates that had already been made un-durable by a
        /// failed `synchronize` (fsyncgate) and so could not land.
        public let droppedByFailedSync: Int
    }

    /// A write of which only a prefix landed.
    public struct TornWrite: Sendable, Hashable {
        /// Index among the file's unsynced operations.
        public let operationIndex: Int
        /// File offset of the write.
        public let offset: Int
        /// Bytes that landed (a prefix of the write).
        public let bytesLanded: Int
        /// Bytes the write carried.
        public let bytesIntended: Int
    }

    /// A size extension whose bytes never arrived.
    public struct GarbageTail: Sendable, Hashable {
        /// Index among the file's unsynced operations of the write whose
        /// size, but not data, landed.
        public let operationIndex: Int
        /// The file range now holding garbage.
        public let range: Range<Int>
        /// Whether the garbage is zeros (otherwise random bytes).
        public let isZeros: Bool
    }

    /// What happened to one directory's entries.
    public struct DirectoryOutcome: Sendable, Hashable {
        /// The directory's path before the power loss (visible, else durable).
        public let path: FilePath?
        /// Whether the directory is still reachable afterwards.
        public let existsAfterward: Bool
        /// Unsynced entry changes (create, rename, remove, mkdir, rmdir).
        public let unsyncedOperations: Int
        /// How many of them landed (always a prefix).
        public let landedOperations: Int
    }

    public var description: String {
        var lines = ["power loss (\(mode), seed \(seed)): closed \(descriptorsClosed) descriptors"]
        for directory in directories where directory.unsyncedOperations > 0 || !directory.existsAfterward {
            let name = directory.path?.string ?? "<unnamed directory>"
            let fate = directory.existsAfterward ? "" : ", directory lost"
            let landed = "\(directory.landedOperations)/\(directory.unsyncedOperations)"
            lines.append("  dir  \(name): \(landed) entry changes landed\(fate)")
        }
        for file in files where file.unsyncedOperations > 0 || !file.existsAfterward || file.droppedByFailedSync > 0 {
            let name = file.path?.string ?? "<unnamed file>"
            guard file.existsAfterward else {
                lines.append("  file \(name): lost (\(file.sizeBefore) bytes)")
                continue
            }
            var line = "  file \(name): \(file.landedOperations.count)/\(file.unsyncedOperations) operations landed"
            line += " \(file.landedOperations), size \(file.sizeBefore) -> \(file.sizeAfter ?? 0)"
            if let torn = file.tornWrite {
                line += ", write #\(torn.operationIndex) at \(torn.offset)"
                line += " torn to \(torn.bytesLanded)/\(torn.bytesIntended) bytes"
            }
            if let garbage = file.garbageTail {
                line += ", \(garbage.isZeros ? "zeroed" : "random") tail \(garbage.range)"
                line += " from write #\(garbage.operationIndex)"
            }
            if file.droppedByFailedSync > 0 {
                line += ", \(file.droppedByFailedSync) operations lost to failed syncs"
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
