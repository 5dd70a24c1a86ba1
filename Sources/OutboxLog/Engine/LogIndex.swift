import OutboxCollections

/// Where a record's frame is: 12 bytes.
struct Location: Hashable, Sendable {
    var segment: UInt32
    var offset: UInt32
    var length: UInt32

    /// Marks "no annotation" without the byte an `Optional` would add.
    static let none = Location(segment: 0, offset: 0, length: 0)
    var exists: Bool { length != 0 }
}

/// The index's entry for a live key: where its value is and, if it has one,
/// its current annotation. 24 bytes.
struct IndexEntry: Hashable, Sendable {
    var value: Location
    var annotation: Location
}

/// Byte accounting for one segment, to pick what compaction should rewrite.
struct SegmentUsage: Sendable, Hashable {
    /// Bytes of all frames in the segment (header excluded).
    var totalBytes: Int64 = 0
    /// Bytes of frames the index still points at.
    var liveBytes: Int64 = 0
    /// Frames in the segment.
    var records = 0
    /// Frames the index still points at.
    var liveRecords = 0
    /// Bytes of the engine's checkpoint markers (dead, but harmless).
    var markerBytes: Int64 = 0
    /// The latest expiry (ms since 1970) of the values and annotations in
    /// the segment that carry one, live or dead; `Int64.min` if none does.
    var latestExpiry = Int64.min
    /// Values and annotations in the segment, live or dead, that carry no
    /// expiry: while there is one, retention keeps the segment.
    var unexpiring = 0

    var deadBytes: Int64 { totalBytes - liveBytes }
    /// A clean segment holds no superseded record and no tombstone: nothing
    /// older can be shadowed by a tombstone that compaction drops. Markers
    /// shadow nothing, and are not worth a rewrite on their own.
    var isClean: Bool { totalBytes - liveBytes - markerBytes == 0 }

    /// Whether every value and annotation in the segment expired at or
    /// before `now` (ms since 1970): retention may remove it once it is the
    /// oldest. Tombstones and markers never hold a segment back: in the
    /// oldest segment they shadow nothing.
    func hasExpired(at now: Int64) -> Bool { unexpiring == 0 && latestExpiry <= now }

    /// Accounts for a value or annotation with `expiry`.
    mutating func count(expiry: Int64?) {
        if let expiry { latestExpiry = max(latestExpiry, expiry) } else { unexpiring += 1 }
    }
}

/// Key → location of its live value and annotation, plus per-segment usage.
///
/// The keys live in a ``PackedTable`` (48 bytes per key — a 24-byte key
/// and this entry — plus 10–15 of slot table; a `Dictionary` took 117).
/// Rebuilt from the segments at an open, or from an index checkpoint and
/// the records after it. The same
/// `apply` replays records at recovery and indexes them at append, so the
/// two can never disagree.
struct LogIndex: Sendable {
    var entries = PackedTable<LogKey, IndexEntry>()
    var usage = SegmentUsageTable()

    /// Records `kind` for `key` at `location`, in sequence order.
    mutating func apply(_ kind: FrameKind, key: LogKey, at location: Location, expiry: Int64?) {
        let length = Int64(location.length)
        var live = false
        switch kind {
        case .value:
            if let old = entries.updateValue(IndexEntry(value: location, annotation: .none), forKey: key) {
                release(old)
            }
            live = true
        case .annotation:
            // An annotation of nothing is dead on arrival.
            let previous = entries.modifyValue(forKey: key) { entry in
                defer { entry.annotation = location }
                return entry.annotation
            }
            if let previous {
                if previous.exists { markDead(previous) }
                live = true
            }
        case .tombstone:
            if let old = entries.removeValue(forKey: key) { release(old) }
        case .marker:
            break
        }
        // One access to the segment's usage: this runs for every record.
        update(location.segment) { usage in
            usage.totalBytes += length
            usage.records += 1
            if live {
                usage.liveBytes += length
                usage.liveRecords += 1
            }
            if kind == .marker { usage.markerBytes += length }  // dead on arrival: compaction drops it
            if kind == .value || kind == .annotation { usage.count(expiry: expiry) }
        }
    }

    @inline(__always)
    private mutating func update(_ segment: UInt32, _ body: (inout SegmentUsage) -> Void) {
        body(&usage[segment, default: SegmentUsage()])
    }

    /// Whether the frame at `location` is what the index holds for `key`.
    func isLive(_ kind: FrameKind, key: LogKey, at location: Location) -> Bool {
        guard let entry = entries[key] else { return false }
        switch kind {
        case .value: return entry.value == location
        case .annotation: return entry.annotation == location
        case .tombstone, .marker: return false
        }
    }

    /// ``removeEntries(in:)`` for `keys`, the keys of every value and
    /// annotation in `segments`: O(`keys`), not O(live keys).
    mutating func removeEntries(in segments: Set<UInt32>, among keys: Set<LogKey>) -> Int {
        var gone = 0
        for key in keys {
            guard let entry = entries[key] else { continue }
            if segments.contains(entry.value.segment) {
                if let old = entries.removeValue(forKey: key) { release(old) }
                gone += 1
            } else if entry.annotation.exists && segments.contains(entry.annotation.segment) {
                markDead(entry.annotation)
                _ = entries.modifyValue(forKey: key) { $0.annotation = .none }
            }
        }
        return gone
    }

    /// Drops every key whose value is in one of `segments` (about to be
    /// removed whole), and any annotation there; returns how many keys went.
    /// A dropped key's annotation in a segment that stays becomes dead there.
    mutating func removeEntries(in segments: Set<UInt32>) -> Int {
        var gone: [LogKey] = []
        var annotationsGone: [LogKey] = []
        entries.forEach { element in
            if segments.contains(element.value.value.segment) {
                gone.append(element.key)
            } else if element.value.annotation.exists && segments.contains(element.value.annotation.segment) {
                annotationsGone.append(element.key)
            }
        }
        for key in gone {
            if let old = entries.removeValue(forKey: key) { release(old) }
        }
        for key in annotationsGone {
            guard let annotation = entries.modifyValue(forKey: key, { entry in
                defer { entry.annotation = .none }
                return entry.annotation
            }) else { continue }
            markDead(annotation)
        }
        return gone.count
    }

    private mutating func release(_ entry: IndexEntry) {
        markDead(entry.value)
        if entry.annotation.exists { markDead(entry.annotation) }
    }

    private mutating func markDead(_ location: Location) {
        update(location.segment) { usage in
            usage.liveBytes -= Int64(location.length)
            usage.liveRecords -= 1
        }
    }
}
