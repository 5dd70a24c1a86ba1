/// Where pages of ``OutboxLog/entries(after:limit:)`` stopped inside
/// segments: for each, the verified records of the segment the page had not
/// considered yet. The next page, asked for the entries after the last one
/// returned, starts from them instead of verifying the segment again, and a
/// segment that has grown since is verified only from where the last scan
/// ended. Paging through a log costs one scan of it, not one per page, and a
/// reader that keeps up with the end (a queue's consumer, woken after each
/// append) verifies each record once, not the whole active segment per read.
///
/// A few readers page at once (a queue's consumers, each at its own
/// position, or several at the same one), so a few cursors are kept, the
/// least recently saved dropped first, and a cursor stays after it is used.
/// Each holds the few verified records its page scanned past the last one
/// it returned (a page's scan stops once it has what the page needs).
struct ScanCursors {
    struct Cursor {
        /// The `after` of the page that may resume here.
        var after: UInt64
        /// The very file that was scanned (a compaction replaces the object).
        var file: SegmentFile
        /// How many bytes of it were verified: always at a frame boundary
        /// (the written size, or where a scan that had enough stopped), so a
        /// scan of the rest starts there.
        var scannedSize: Int64
        var remaining: ArraySlice<ScannedRecord>
        /// The last record of the verified run, `nil` if it has none yet.
        var lastSequence: UInt64?
    }

    static let capacity = 4
    /// Most recently saved last.
    private var cursors: [Cursor] = []

    /// Keeps `cursor`, replacing one that resumes the same page, and forgets
    /// cursors on files `isCurrent` says were replaced or removed (they
    /// would only hold those files open).
    mutating func save(_ cursor: Cursor, isCurrent: (SegmentFile) -> Bool) {
        cursors.removeAll { !isCurrent($0.file) }
        // A file replaced or closed while the page ran: nothing to resume.
        guard isCurrent(cursor.file) else { return }
        if let same = cursors.firstIndex(where: { $0.after == cursor.after && $0.file === cursor.file }) {
            // Two pages after the same record: keep the one that saw more.
            guard cursors[same].scannedSize <= cursor.scannedSize else { return }
            cursors.remove(at: same)
        }
        var cursor = cursor
        // A slice keeps its whole array alive: once most of it was returned,
        // keep a copy of the rest (the copies halve, so paging through a
        // segment copies each record about once).
        if cursor.remaining.startIndex > cursor.remaining.count { cursor.remaining = ArraySlice(Array(cursor.remaining)) }
        cursors.append(cursor)
        if cursors.count > Self.capacity { cursors.removeFirst(cursors.count - Self.capacity) }
    }

    /// The cursor that continues a page after `after` in `file`, now
    /// verified up to `scannedSize` (not less than when it was saved).
    func find(after: UInt64, file: SegmentFile, scannedSize: Int64) -> Cursor? {
        cursors.last { $0.after == after && $0.file === file && $0.scannedSize <= scannedSize }
    }

    mutating func removeAll() { cursors.removeAll() }
}
