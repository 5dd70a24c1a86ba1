import Foundation

/// A completed key in the compact index: where its record is, and until
/// when it lives. 20 bytes; with the 8-byte digest hash as the dictionary's
/// key, about 28 bytes per bucket.
struct JournalSlot: Sendable, Hashable {
    var check: UInt32
    var segment: UInt32
    var offset: UInt32
    var length: UInt32
    var expires: UInt32

    var location: JournalWriter.Location { .init(segment: segment, offset: offset, length: length) }
}

/// What a segment holds, for expiry and the byte cap.
struct JournalSegmentStats: Sendable, Hashable {
    var bytes: Int64
    /// The latest expiry of any record in it (whole seconds, rounded up): the
    /// segment is removed once this has passed.
    var maxExpires: UInt32
}

/// The store's memory, behind its lock.
///
/// Completed keys live in ``index`` only as digests and record locations;
/// their responses stay on disk and are read on a replay. Keys that are not
/// settled yet (in progress, outcome unknown) are few, and are kept whole in
/// ``unsettled``.
struct JournalState: Sendable {
    var index: [UInt64: JournalSlot] = [:]
    var unsettled: [String: KeyRecord] = [:]
    /// Segment id → stats, for every segment file (the active one included).
    var segments: [UInt32: JournalSegmentStats] = [:]
    var totalBytes: Int64 = 0

    /// Keys held: completed (until their segment is removed) and unsettled.
    var keyCount: Int { index.count + unsettled.count }

    /// Accounts for a record of `location` expiring at `expires`.
    mutating func account(_ location: JournalWriter.Location, expires: UInt32) {
        segments[location.segment, default: JournalSegmentStats(bytes: Int64(JournalFormat.segmentHeaderSize), maxExpires: 0)]
            .bytes += Int64(location.length)
        segments[location.segment]!.maxExpires = max(segments[location.segment]!.maxExpires, expires)
        totalBytes += Int64(location.length)
    }

    /// The oldest segments, up to (not including) `active`, whose every
    /// record expired at or before `now`, in order. A segment is removed only
    /// with every segment before it, so a record is never removed while an
    /// older record it settles (a claim it completes or releases) remains.
    func expiredSegments(now: UInt32, active: UInt32) -> [UInt32] {
        var expired: [UInt32] = []
        for id in segments.keys.sorted() where id < active {
            guard segments[id]!.maxExpires <= now else { break }
            expired.append(id)
        }
        return expired
    }

    /// Seconds until the oldest segment can be removed (at least 1).
    func secondsUntilFirstReclaim(now: UInt32) -> Int {
        guard let oldest = segments.keys.min(), let stats = segments[oldest] else { return 60 }
        return max(1, Int(stats.maxExpires) - Int(now))
    }
}
