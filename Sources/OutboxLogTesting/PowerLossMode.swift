/// How much of the not-yet-durable state a simulated power loss keeps.
///
/// Whatever the mode, everything that was made durable survives: file bytes
/// after a successful `synchronize`, directory entries after a successful
/// `synchronizeDirectory` of their directory. The modes differ only in
/// which *unsynced* operations also happen to reach the disk. Each file's
/// and each directory's choices are drawn from their own generator derived
/// from the seed (see ``SplitMix64/derived(seed:stream:)``), so the outcome
/// depends only on the operations issued and the seed.
///
/// In every mode except ``dropUnsynced``, each directory keeps a uniformly
/// random prefix (possibly empty, possibly all) of its unsynced entry
/// changes, independently of other directories. Directory changes are never
/// reordered within a directory: journaling file systems commit them in
/// order, and a subset could name files that were never created.
public enum PowerLossMode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Nothing unsynced survives: every file is exactly its durable image,
    /// every directory exactly its durable entries. The strictest reading
    /// of the durability contract, and fully deterministic.
    case dropUnsynced

    /// Each file keeps a uniformly random prefix (in issue order, from none
    /// to all) of its unsynced writes and truncates, independently of other
    /// files — so a later write to file B can survive while an earlier one
    /// to file A is lost. Models a disk that writes back in order per file.
    case keepRandomPrefix

    /// Like ``keepRandomPrefix``, except that the prefix always holds at
    /// least one operation, and the last write in it is torn: only its
    /// bytes up to a randomly chosen 512-byte sector boundary strictly
    /// inside the write land (so a write that crosses sectors is cut
    /// mid-record whenever records are not sector-aligned). A write that
    /// lies within a single sector is atomic and lands whole, as on real
    /// drives. The file's size covers exactly the landed bytes.
    case tearLastWrite

    /// The "inode size updated before the data" case (ext4 without
    /// `data=ordered`, XFS, power loss during delayed allocation): for each
    /// file with an unsynced write that extends the file, one such write is
    /// chosen at random; the operations before it land, its data does not,
    /// but the file's size grows to cover it, and the newly covered bytes
    /// are garbage — all zeros or all random, chosen at random per file.
    /// Bytes the write would have overwritten inside the old size keep their
    /// old values. Files with no extending write behave as in
    /// ``keepRandomPrefix``.
    case garbageTail

    /// Each unsynced write or truncate of each file survives independently
    /// with probability ½ (an arbitrary subset, not a prefix); survivors are
    /// applied in issue order. Models a drive's write cache that flushes
    /// sectors in any order, across files too.
    case reorder

    public var description: String { rawValue }
}
