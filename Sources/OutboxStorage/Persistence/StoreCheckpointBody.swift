import Foundation
import OutboxLog
import OutboxModel

/// The body of the store checkpoint (``StoreCheckpoint``), plain:
///
/// ```
/// u32 n · n × (u32 id, str name)                    interned types, scopes, coalescing keys
/// u64 m · m × entry:
///   16 id · u64 sequence · i64 when (ms) · i64 created at (ms) · u32 stored bytes · u32 scope · u32 type
///   u32 coalescing key (name ids, 0: none) · i16 priority · u16 attempts · u16 max attempts
///   u8 status (as in the state record) · u8 flags: 1 unchanged since enqueue, 2 dependencies,
///      4 app-supplied idempotency key, 8 failure, 16 log key
///   [u16 k · 16·k dependency ids] [str app key]
///   [failures, as in the state record (``FailureCoding``), never with fields 0]
///   [16 log key (sealed queues: the keyed hash the entry's records are stored under)]
/// u64 c · c × completion: 16 id · i64 synced at (ms) · u8 flags (1 server id, 4 app key, 16 log key)
///   [str server id] [str app key] [16 log key]
/// ```
/// `str` is a u32 length and UTF-8. Decoding accepts only what encoding
/// writes: a flag, a status or a name id it does not know, a count that
/// overruns the body, a byte left over, or anything else a store never
/// writes (``decode(_:into:nextSequence:sealed:)``) rejects the checkpoint
/// (the store then reads every entry).
package enum StoreCheckpointBody {
    private static let unchanged: UInt8 = 1
    private static let hasDependencies: UInt8 = 2
    private static let hasAppKey: UInt8 = 4
    private static let hasFailure: UInt8 = 8
    private static let hasLogKey: UInt8 = 16
    private static let hasServerID: UInt8 = 1

    // MARK: Encoding

    package static func encode(_ content: Scheduler.CheckpointContent, format: RecordFormat) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + content.entries.count * 72 + content.completions.count * 40)
        let names = content.strings.all
        writer.integer(UInt32(names.count))
        for (id, name) in names {
            writer.integer(id)
            writer.string(name)
        }
        writer.integer(UInt64(content.entries.count))
        content.entries.forEach { entry in
            let failure = content.failures[entry.id].flatMap { $0.isEmpty ? nil : $0 }
            let appKey = content.appKeys[entry.id]
            var flags: UInt8 = content.pristine.contains(entry.id) ? unchanged : 0
            if let dependencies = entry.dependencies, !dependencies.isEmpty { flags |= hasDependencies }
            if appKey != nil { flags |= hasAppKey }
            if failure != nil { flags |= hasFailure }
            if format.isSealed { flags |= hasLogKey }
            writer.uuid(entry.id.uuid)
            writer.integer(entry.sequence)
            writer.integer(entry.when)
            writer.integer(entry.createdAt)
            writer.integer(entry.storedBytes)
            writer.integer(entry.scope)
            writer.integer(entry.type)
            writer.integer(entry.coalescing)
            writer.integer(entry.priority)
            writer.integer(entry.attempts)
            writer.integer(entry.maxAttempts)
            writer.integer(entry.status.code)
            writer.integer(flags)
            if flags & hasDependencies != 0 {
                writer.integer(UInt16(entry.dependencies!.count))
                for dependency in entry.dependencies! { writer.uuid(dependency.uuid) }
            }
            if let appKey { writer.string(appKey) }
            if failure != nil { FailureCoding.encode(failure, into: &writer) }
            if format.isSealed { writer.raw(format.entryKey(entry.id).bytes.dropFirst()) }
        }
        writer.integer(UInt64(content.completions.count))
        for (id, completion) in content.completions {
            var flags: UInt8 = completion.serverID != nil ? hasServerID : 0
            if completion.idempotencyKey != nil { flags |= hasAppKey }
            if format.isSealed { flags |= hasLogKey }
            writer.uuid(id.uuid)
            writer.integer(completion.syncedAt)
            writer.integer(flags)
            if let serverID = completion.serverID { writer.string(serverID) }
            if let key = completion.idempotencyKey { writer.string(key) }
            if format.isSealed { writer.raw(format.completionKey(id).bytes.dropFirst()) }
        }
        return writer.bytes
    }

    // MARK: Decoding

    /// What a decoded body gives besides the scheduler's state: where each
    /// entry's and completion's records are stored in a sealed queue (a
    /// keyed hash of the id), to find what a changed log key stands for.
    package struct LogKeys: Sendable {
        package var entries: [[UInt8]: OutboxEntryID] = [:]
        package var completions: [[UInt8]: OutboxEntryID] = [:]
    }

    package typealias Failure = ByteReader.Failure

    /// The fewest bytes an entry, a completion and a name take.
    private static let minimumEntrySize = 16 + 8 + 8 + 8 + 4 + 4 + 4 + 4 + 2 + 2 + 2 + 1 + 1
    private static let minimumCompletionSize = 16 + 8 + 1
    private static let minimumNameSize = 4 + 4

    /// Loads the body into `scheduler`, which must be fresh and is to be
    /// discarded if this throws: a rejected body may have loaded part of
    /// itself first (a repeated id is found by storing it). `sealed`: the
    /// queue is sealed, so every entry and completion carries its log key
    /// (a plain queue's carry none). Returns the sealed queue's log keys
    /// (empty for a plain one, whose keys are the ids).
    ///
    /// Beyond reading the bytes, it refuses what a store never writes, so a
    /// body that loads is the body a store writes for what it loaded (up to
    /// the order of names and completions): a name no entry uses, one name
    /// under two ids, an app key held by two ids, the unchanged flag on an
    /// entry it does not describe, a log key present in a plain queue's
    /// body or missing from a sealed one's.
    package static func decode(
        _ body: [UInt8], into scheduler: inout Scheduler, nextSequence: UInt64, sealed: Bool
    ) throws(Failure) -> LogKeys {
        var logKeys = LogKeys()
        guard nextSequence <= EntryMetadata.sequenceLimit else {
            throw Failure(reason: "next sequence number \(nextSequence) is beyond any a store reaches")
        }
        var reader = ByteReader(body)
        let names = try decodeNames(&reader)
        let entryCount = try reader.count(UInt64.self, eachAtLeast: minimumEntrySize)
        var references: [UInt32: Int] = [:]
        // Names are set once every entry is in (loading does not read them).
        let conflict = try scheduler.loadEntries(count: entryCount) { _ throws(Failure) in
            try decodeEntry(
                &reader, names: names, references: &references, logKeys: &logKeys, nextSequence: nextSequence,
                sealed: sealed)
        }
        // Either rejects the checkpoint; the scheduler is then discarded.
        switch conflict {
        case nil: break
        case .idRepeated: throw Failure(reason: "two entries have one id")
        case .keyHeldTwice(let holder, let id): throw Failure(reason: "entries \(holder) and \(id) hold one app key")
        }
        if let unused = names.keys.first(where: { references[$0] == nil }) {
            throw Failure(reason: "name id \(unused) is used by no entry")
        }
        scheduler.restore(strings: StringInterner(restoring: names, references: references), nextSequence: nextSequence)
        try decodeCompletions(&reader, into: &scheduler, sealed: sealed, logKeys: &logKeys)
        guard reader.isAtEnd else { throw Failure(reason: "bytes left over after the last completion") }
        return logKeys
    }

    /// One entry of the checkpoint's list.
    private static func decodeEntry(
        _ reader: inout ByteReader, names: [UInt32: String], references: inout [UInt32: Int], logKeys: inout LogKeys,
        nextSequence: UInt64, sealed: Bool
    ) throws(Failure) -> Scheduler.LoadedEntry {
        let id = OutboxEntryID(bytes: try reader.slice(16))
        let sequence = try reader.integer(UInt64.self)
        // Every entry was numbered before the checkpoint's next number.
        guard sequence < nextSequence else {
            throw Failure(reason: "entry \(id) has sequence number \(sequence), not below the next one, \(nextSequence)")
        }
        let when = try reader.date("the next attempt's time")
        let createdAt = try reader.date("the creation date")
        let storedBytes = try reader.integer(UInt32.self)
        let scope = try reader.integer(UInt32.self)
        let type = try reader.integer(UInt32.self)
        let coalescing = try reader.integer(UInt32.self)
        let priority = try reader.integer(Int16.self)
        let attempts = try reader.integer(UInt16.self)
        let maxAttempts = try reader.integer(UInt16.self)
        let code = try reader.integer(UInt8.self)
        guard let status = OutboxStatus(code: code) else { throw Failure(reason: "unknown status \(code)") }
        let flags = try reader.integer(UInt8.self)
        guard flags & ~(unchanged | hasDependencies | hasAppKey | hasFailure | hasLogKey) == 0 else {
            throw Failure(reason: "unknown entry flags \(flags)")
        }
        // Set only on what it describes: a pending entry with a coalescing key.
        guard flags & unchanged == 0 || (coalescing != 0 && status == .pending) else {
            throw Failure(reason: "entry \(id) is marked unchanged, which only a pending entry with a coalescing key is")
        }
        for name in [scope, type, coalescing] where name != 0 {
            guard names[name] != nil else { throw Failure(reason: "an entry names the unknown name id \(name)") }
            references[name, default: 0] += 1
        }
        var dependencies: [OutboxEntryID]?
        if flags & hasDependencies != 0 {
            let count = try reader.count(UInt16.self, eachAtLeast: 16)
            guard count > 0 else { throw Failure(reason: "an empty dependency list") }
            dependencies = []
            for _ in 0..<count { dependencies!.append(OutboxEntryID(bytes: try reader.slice(16))) }
        }
        let appKey = flags & hasAppKey != 0 ? try reader.string() : nil
        let failure = flags & hasFailure != 0 ? try decodeFailure(&reader) : nil
        if let key = try logKey(&reader, flags: flags, sealed: sealed, of: "entry \(id)") { logKeys.entries[key] = id }
        let metadata = EntryMetadata(
            id: id, sequence: sequence, status: status, priority: priority, attempts: attempts,
            maxAttempts: maxAttempts, scope: scope, type: type, coalescing: coalescing, when: when,
            createdAt: createdAt, storedBytes: storedBytes, dependencies: dependencies)
        if let cause = failure?.dependency, !cause.fits(metadata) {
            throw Failure(reason: "entry \(id) has a dependency failure no store records for it")
        }
        return Scheduler.LoadedEntry(metadata: metadata, failure: failure, unchanged: flags & unchanged != 0, appKey: appKey)
    }

    /// The interned names, each under one id (0 is "none").
    private static func decodeNames(_ reader: inout ByteReader) throws(Failure) -> [UInt32: String] {
        let count = try reader.count(UInt32.self, eachAtLeast: minimumNameSize)
        var names: [UInt32: String] = [:]
        var seen: Set<String> = []
        for _ in 0..<count {
            let id = try reader.integer(UInt32.self)
            let name = try reader.string()
            guard id != 0, names.updateValue(name, forKey: id) == nil else {
                throw Failure(reason: "name id \(id) is invalid or repeated")
            }
            guard seen.insert(name).inserted else { throw Failure(reason: "the name of id \(id) is also under another id") }
        }
        return names
    }

    private static func decodeCompletions(
        _ reader: inout ByteReader, into scheduler: inout Scheduler, sealed: Bool, logKeys: inout LogKeys
    ) throws(Failure) {
        let count = try reader.count(UInt64.self, eachAtLeast: minimumCompletionSize)
        for _ in 0..<count {
            let id = OutboxEntryID(bytes: try reader.slice(16))
            let syncedAt = try reader.date("the delivery time")
            let flags = try reader.integer(UInt8.self)
            guard flags & ~(hasServerID | hasAppKey | hasLogKey) == 0 else {
                throw Failure(reason: "unknown completion flags \(flags)")
            }
            let serverID = flags & hasServerID != 0 ? try reader.string() : nil
            let appKey = flags & hasAppKey != 0 ? try reader.string() : nil
            // A delivered entry still kept: its completion holds its key;
            // any other holds a key no other id holds.
            if scheduler.entries.contains(id) {
                guard scheduler.appKeys[id] == appKey else { throw Failure(reason: "completion \(id) holds another key than its entry") }
            } else if let appKey, let holder = scheduler.keyHolders[appKey] {
                throw Failure(reason: "completion \(id) holds the app key of \(holder)")
            }
            if let key = try logKey(&reader, flags: flags, sealed: sealed, of: "completion \(id)") { logKeys.completions[key] = id }
            guard scheduler.completion(id) == nil else { throw Failure(reason: "completion \(id) appears twice") }
            scheduler.loadCompletion(id, Completion(serverID: serverID, syncedAt: syncedAt, idempotencyKey: appKey))
        }
    }

    /// A record's log key: there exactly when the queue is sealed.
    private static func logKey(
        _ reader: inout ByteReader, flags: UInt8, sealed: Bool, of what: @autoclosure () -> String
    ) throws(Failure) -> [UInt8]? {
        guard (flags & hasLogKey != 0) == sealed else {
            throw Failure(reason: "\(what()) \(sealed ? "lacks a log key in a sealed" : "has a log key in a plain") queue's checkpoint")
        }
        return sealed ? try reader.raw(16) : nil
    }

    private static func decodeFailure(_ reader: inout ByteReader) throws(Failure) -> FailureInfo {
        guard let failure = try FailureCoding.decode(&reader) else { throw Failure(reason: "a failure with no field") }
        return failure
    }
}
