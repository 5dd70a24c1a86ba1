import Foundation
import OutboxLog
import SystemPackage

/// What opening a key journal found.
public struct JournalRecoveryReport: Sendable, Hashable {
    /// Segments whose index file was read (their records were not).
    public var segmentsFromIndex = 0
    /// Segments read record by record (the active one, and any sealed one
    /// whose index file was missing or damaged; that file is rewritten).
    public var segmentsScanned = 0
    /// Bytes cut from the end of the active segment: a record torn by a crash.
    public var tornTailBytes = 0
    /// Completed keys loaded into the index.
    public var completedKeys = 0
    /// Keys claimed by a server that stopped before they completed, and keys
    /// whose response was not recorded: answered outcome-unknown.
    public var unsettledKeys = 0
}

/// Damage an open refuses to repair: a bad record that is not a torn tail.
public struct JournalCorruption: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var offset: Int
    public var reason: String
    public var description: String { "the key journal \(file) is damaged at offset \(offset): \(reason)" }
}

/// Rebuilds a journal's memory from its files, blocking: run it off the
/// cooperative pool.
struct JournalRecovery {
    let directory: FilePath
    let fileSystem: any FileSystem
    let digester: KeyDigester
    let now: Date

    var state = JournalState()
    var report = JournalRecoveryReport()
    /// Claims and unknown outcomes not settled yet, by digest.
    private var pending: [KeyDigest: (JournalWriter.Location, JournalRecord.Kind)] = [:]
    /// The last segment: its records and where its valid bytes end.
    private(set) var activeEntries: [JournalEntry] = []
    private(set) var activeEnd: Int64 = Int64(JournalFormat.segmentHeaderSize)

    init(directory: FilePath, fileSystem: any FileSystem, digester: KeyDigester, now: Date) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.digester = digester
        self.now = now
    }

    /// Loads every segment in `ids` (ascending; the last is the active one).
    mutating func load(_ ids: [UInt32]) throws {
        var indexed: [(UInt32, [JournalEntry], Int64)] = []
        for (position, id) in ids.enumerated() {
            let isActive = position == ids.count - 1
            if !isActive, let entries = try readIndex(id) {
                indexed.append((id, entries, try fileSize(id)))
                report.segmentsFromIndex += 1
                continue
            }
            let (entries, end) = try scan(id, isActive: isActive)
            report.segmentsScanned += 1
            if isActive {
                activeEntries = entries
                activeEnd = end
            } else {
                try JournalFiles.writeIndex(
                    segment: id, entries: JournalWriter.withoutSettledClaims(entries), in: directory, fileSystem: fileSystem)
            }
            indexed.append((id, entries, end))
        }
        // Sized once for the completed records (an upper bound on the keys):
        // no rehashing while loading, and no room reserved for claims.
        state.index.reserveCapacity(indexed.reduce(0) { total, segment in total + segment.1.lazy.filter { $0.kind == .complete }.count })
        for (id, entries, bytes) in indexed {
            state.segments[id] = JournalSegmentStats(bytes: bytes, maxExpires: entries.map(\.expires).max() ?? 0)
            state.totalBytes += bytes
            for entry in entries { apply(entry, segment: id) }
        }
        try settlePending()
        report.completedKeys = state.index.count
        report.unsettledKeys = state.unsettled.count
    }

    /// Replays one record's effect, in journal order.
    private mutating func apply(_ entry: JournalEntry, segment: UInt32) {
        let location = JournalWriter.Location(segment: segment, offset: entry.offset, length: entry.length)
        switch entry.kind {
        case .claim, .unknown:
            pending[entry.digest] = (location, entry.kind)
        case .complete:
            if !pending.isEmpty { pending[entry.digest] = nil }
            if entry.expires > JournalFormat.nowSeconds(now) {
                state.index[entry.digest.hash] = JournalSlot(
                    check: entry.digest.check, segment: segment, offset: entry.offset, length: entry.length, expires: entry.expires)
            } else if state.index[entry.digest.hash]?.check == entry.digest.check {
                state.index[entry.digest.hash] = nil
            }
        case .release:
            if !pending.isEmpty { pending[entry.digest] = nil }
        }
    }

    /// Reads the claims nobody settled: their server stopped while they ran
    /// (or their response was not recorded). Outcome unknown, never re-run.
    private mutating func settlePending() throws {
        for (location, _) in pending.values {
            guard let record = try JournalFiles.readRecord(location, in: directory, fileSystem: fileSystem) else {
                throw JournalCorruption(file: JournalFormat.segmentName(location.segment), offset: Int(location.offset), reason: "an unreadable claim")
            }
            switch record {
            case .claim(let key, let fingerprint, let since, let expiresAt) where expiresAt > now:
                state.unsettled[key] = KeyRecord(
                    fingerprint: fingerprint, state: .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .serverStopped))
            case .unknown(let key, let fingerprint, let since, let expiresAt) where expiresAt > now:
                state.unsettled[key] = KeyRecord(
                    fingerprint: fingerprint, state: .outcomeUnknown(since: since, expiresAt: expiresAt, reason: .responseNotRecorded))
            default:
                break
            }
        }
    }

    private func readIndex(_ id: UInt32) throws -> [JournalEntry]? {
        let path = directory.appending(JournalFormat.indexName(id))
        guard try fileSystem.itemKind(at: path) == .file else { return nil }
        return JournalEntry.decodeIndexFile(try JournalFiles.readFile(path, fileSystem: fileSystem), segment: id)
    }

    private func fileSize(_ id: UInt32) throws -> Int64 {
        let descriptor = try fileSystem.openFile(directory.appending(JournalFormat.segmentName(id)), mode: .readOnly)
        defer { try? fileSystem.close(descriptor) }
        return try fileSystem.size(of: descriptor)
    }

    /// Reads a segment's records. A record cut short at the end of the
    /// active segment is a torn write: cut off (and reported). Any other bad
    /// record fails the open, naming the file and offset.
    private mutating func scan(_ id: UInt32, isActive: Bool) throws -> ([JournalEntry], Int64) {
        let name = JournalFormat.segmentName(id)
        let bytes = try JournalFiles.readFile(directory.appending(name), fileSystem: fileSystem)
        if let problem = JournalFormat.checkSegmentHeader(bytes[...], id: id) {
            // A crash while the segment was being created leaves it short.
            if isActive, bytes.count < JournalFormat.segmentHeaderSize { return ([], try recreate(id)) }
            throw JournalCorruption(file: name, offset: 0, reason: problem)
        }
        var entries: [JournalEntry] = []
        var offset = JournalFormat.segmentHeaderSize
        while offset < bytes.count {
            switch JournalFormat.readFrame(bytes, at: offset) {
            case .record(let record, let length):
                entries.append(JournalEntry(
                    digest: digester.digest(record.key), offset: UInt32(offset), length: UInt32(length),
                    expires: JournalFormat.expirySeconds(record.expiresAt), kind: record.kind))
                offset += length
            case .cut where isActive:
                report.tornTailBytes = bytes.count - offset
                try truncate(id, to: offset)
                return (entries, Int64(offset))
            case .cut:
                throw JournalCorruption(file: name, offset: offset, reason: "a record cut short in a sealed segment")
            case .damaged(let reason):
                if isActive, Self.nothingValid(after: offset, in: bytes) {
                    report.tornTailBytes = bytes.count - offset
                    try truncate(id, to: offset)
                    return (entries, Int64(offset))
                }
                throw JournalCorruption(file: name, offset: offset, reason: reason)
            }
        }
        return (entries, Int64(offset))
    }

    /// Whether no intact frame starts anywhere after `offset`: then the bad
    /// bytes are a torn tail, not damage in the middle of good records.
    private static func nothingValid(after offset: Int, in bytes: [UInt8]) -> Bool {
        var candidate = offset + 1
        while candidate + JournalFormat.frameHeaderSize <= bytes.count {
            if case .record = JournalFormat.readFrame(bytes, at: candidate) { return false }
            candidate += 1
        }
        return true
    }

    private func truncate(_ id: UInt32, to size: Int) throws {
        let descriptor = try fileSystem.openFile(directory.appending(JournalFormat.segmentName(id)), mode: .readWrite)
        defer { try? fileSystem.close(descriptor) }
        try fileSystem.truncate(descriptor, to: Int64(size))
        try fileSystem.synchronize(descriptor)
    }

    private func recreate(_ id: UInt32) throws -> Int64 {
        try fileSystem.removeFile(directory.appending(JournalFormat.segmentName(id)))
        try fileSystem.close(try JournalFiles.createSegment(id, in: directory, fileSystem: fileSystem))
        return Int64(JournalFormat.segmentHeaderSize)
    }
}
