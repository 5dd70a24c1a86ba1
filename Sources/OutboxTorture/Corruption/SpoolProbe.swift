import OutboxLog
import SystemPackage

/// What a damaged spool's own log serves, read (read-only, strict) before
/// the owner opens the copy: the owner must move in every entry record it
/// serves, or report the spool. An entry the log itself no longer serves
/// is not the owner's to find: cut with a torn tail (Docs/FORMAT.md, "Torn
/// tail or damage") — what a writer killed before its write was durable
/// leaves too — or in a segment deleted whole, the spool's only one (the
/// log opens that as empty and clean, as a writer killed before its first
/// segment leaves it).
struct SpoolProbe: Sendable {
    /// The spool's log opened (strict); if not, the owner must report it.
    var opens: Bool
    /// Distinct entry records (keys `E`…) it serves.
    var entries: Int
    /// Its open cut a torn tail.
    var tailCut: Bool

    static func read(_ path: String) async -> SpoolProbe {
        var configuration = TortureLogConfiguration.make()
        configuration.readOnly = true
        configuration.createIfMissing = false
        guard let log = try? await OutboxLog.open(at: FilePath(path), configuration: configuration) else {
            return SpoolProbe(opens: false, entries: 0, tailCut: false)
        }
        var keys: Set<LogKey> = []
        var after: UInt64 = 0
        var readable = true
        while readable {
            guard let page = try? await log.entries(after: after, limit: 1024) else {
                readable = false
                break
            }
            guard let last = page.last else { break }
            after = last.sequence
            for record in page where record.key.bytes.first == 0x45 { keys.insert(record.key) }  // "E": an entry
        }
        let tailCut = log.recoveryReport.truncatedTail != nil
        try? await log.close()
        return SpoolProbe(opens: readable, entries: readable ? keys.count : 0, tailCut: tailCut)
    }
}
