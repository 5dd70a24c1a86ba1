import IdempotencyKeyMiddleware
extension JournalFuzzing {
    /// Seed inputs from the segments and index files a store wrote: each
    /// segment's frames (from its first, and from its header), its header,
    /// each record, each index file, and the segments' names (with a few a
    /// journal never gives).
    package static func seeds(segments: [[UInt8]], indexes: [[UInt8]]) -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for segment in segments {
            let header = JournalFormat.segmentHeaderSize
            // The frames from the first (offset 0), and from offset 3 after three other bytes.
            seeds.append([0] + segment.dropFirst(header))
            seeds.append([3 << 4] + [0xAA, 0xBB, 0xCC] + segment.dropFirst(header))
            seeds.append([1] + segment.prefix(header))
            var offset = header
            var kinds: Set<JournalRecord.Kind> = []
            while case .record(let record, let length) = JournalFormat.readFrame(segment, at: offset) {
                // One record of each kind is enough.
                if kinds.insert(record.kind).inserted { seeds.append([3, record.kind.rawValue] + record.encoded()) }
                offset += length
            }
        }
        for index in indexes { seeds.append([2] + index) }
        for name in [JournalFormat.segmentName(1), JournalFormat.segmentName(0xA0B1_C2D3), "keys-0000000A.journal", "keys-+0000001.journal",
            JournalFormat.indexName(1)]
        {
            seeds.append([4] + Array(name.utf8))
        }
        return seeds
    }
}
