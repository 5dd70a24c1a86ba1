/// A point in a log's history, as a checkpoint records it: every record up
/// to ``sequence`` is reflected in the checkpoint, and the log's segments at
/// that moment are listed (base and salt, in order).
///
/// A checkpoint may be used with the log only while the log still holds
/// exactly the history after that point: ``matches(_:)`` requires that the
/// listed segments are still the log's first ones, unchanged (compaction and
/// salvage give every file they rewrite a new salt, and a copied log has new
/// salts throughout), and that every segment after them was appended, not
/// rewritten (a rewrite drops superseded records and tombstones, which a
/// reader of the history after the point would miss). Anything else — a
/// compaction since, a salvage, another log's checkpoint — and the
/// checkpoint is not used: the open reads the whole log (Docs/FORMAT.md).
package struct LogPosition: Sendable, Hashable {
    package struct Segment: Sendable, Hashable {
        package var base: UInt64
        package var salt: UInt64

        package init(base: UInt64, salt: UInt64) {
            self.base = base
            self.salt = salt
        }
    }

    /// The last sequence number the checkpoint covers (0: none).
    package var sequence: UInt64
    /// The log's segments when the checkpoint was taken, oldest first.
    package var segments: [Segment]

    package init(sequence: UInt64, segments: [Segment]) {
        self.sequence = sequence
        self.segments = segments
    }

    /// Whether `current` (the log's segments now, oldest first, and for each
    /// whether it was rewritten) still holds the history after this point:
    /// it starts with exactly ``segments`` and every later one was appended.
    func matches(_ current: [(segment: Segment, rewritten: Bool)]) -> Bool {
        guard current.count >= segments.count else { return false }
        for (position, segment) in segments.enumerated() where current[position].segment != segment { return false }
        return current[segments.count...].allSatisfy { !$0.rewritten }
    }

    // MARK: Bytes

    /// `u64 sequence · u32 n · n × (u64 base, u64 salt)`.
    package func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12 + 16 * segments.count)
        bytes.appendLittleEndian(sequence)
        bytes.appendLittleEndian(UInt32(segments.count))
        for segment in segments {
            bytes.appendLittleEndian(segment.base)
            bytes.appendLittleEndian(segment.salt)
        }
        return bytes
    }

    /// Decodes ``encoded()`` from the start of `bytes`; returns the position
    /// and the bytes it took, or `nil` if they do not hold one.
    package static func decode(_ bytes: UnsafeRawBufferPointer) -> (LogPosition, Int)? {
        guard bytes.count >= 12 else { return nil }
        let sequence: UInt64 = bytes.loadLittleEndian(at: 0)
        let count = Int(clamping: bytes.loadLittleEndian(at: 8, as: UInt32.self))
        guard count <= bytes.count / 16, 12 + 16 * count <= bytes.count else { return nil }
        let size = 12 + 16 * count
        var segments: [Segment] = []
        segments.reserveCapacity(count)
        for index in 0..<count {
            let at = 12 + 16 * index
            segments.append(Segment(base: bytes.loadLittleEndian(at: at), salt: bytes.loadLittleEndian(at: at + 8)))
        }
        return (LogPosition(sequence: sequence, segments: segments), size)
    }
}
