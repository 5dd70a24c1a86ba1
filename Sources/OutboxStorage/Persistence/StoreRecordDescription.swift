import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// What a plain queue's records and checkpoint decode to, as JSON objects
/// named after Docs/STORE-FORMAT.md's fields: the expected results of the
/// store's test vectors (Tests/StoreVectors), made by `outbox log
/// make-store-vectors` and checked by the tests with the same decoders the
/// store opens a queue with (``EntryCodec``, ``StoreCheckpointBody``). Ids
/// and byte strings are lowercase hex, payloads base64, times milliseconds
/// since 1970; entries are in sequence order, completions by id.
package enum StoreRecordDescription {
    /// The plain queue in `directory` (a copy: opening its log read-only
    /// still creates `LOCK`): `{"queue": …}` from its log and `PARTITION`,
    /// and `"checkpoint"` from `SCHEDULE` if there is one.
    package static func directory(
        _ directory: FilePath, configuration: OutboxLog.Configuration = OutboxLog.Configuration()
    ) async throws -> [String: Any] {
        let partition = String(decoding: try file(directory, PartitionDirectory.nameFileName) ?? [], as: UTF8.self)
        var result: [String: Any] = ["queue": try queue(try await readAll(directory, configuration), partition: partition)]
        if let schedule = try file(directory, StoreCheckpoint.fileName) {
            result["checkpoint"] = try checkpoint(schedule, partition: partition)
        }
        return result
    }

    /// Every live record of the log in `directory`, opened strict and read-only.
    package static func readAll(_ directory: FilePath, _ configuration: OutboxLog.Configuration) async throws -> [LogEntry] {
        var configuration = configuration
        configuration.readOnly = true
        configuration.createIfMissing = false
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        var records: [LogEntry] = []
        do {
            for try await record in log.allEntries() { records.append(record) }
        } catch {
            try? await log.close()
            throw error
        }
        try await log.close()
        return records
    }

    static func file(_ directory: FilePath, _ name: String) throws -> [UInt8]? {
        let path = directory.appending(name).string
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Every live record of a plain queue's log, decoded. Throws what the
    /// decoders throw: a vector that does not decode is a failed check.
    package static func queue(_ records: [LogEntry], partition: String) throws -> [String: Any] {
        var entries: [(UInt64, [String: Any])] = []
        var completions: [(String, [String: Any])] = []
        var others: [[String: Any]] = []
        for record in records {
            let key = record.key.bytes
            switch key.first {
            case RecordFormat.entryPrefix where key.count == 17:
                let body = try EntryCodec.decode(record.value)
                guard body.id.bytes == Array(key.dropFirst()) else {
                    throw OutboxError(.corruptEntry, "an entry body under another entry's key", entry: body.id)
                }
                let state = try record.annotation.map { try EntryCodec.decodeState($0.payload) }
                entries.append((body.sequence, entry(body, state: state)))
            case RecordFormat.completionPrefix where key.count == 17:
                let completion = try EntryCodec.decodeCompletion(record.value)
                let id = hex(key.dropFirst())
                completions.append((id, Self.completion(id: id, completion)))
            default:
                others.append(["key": hex(key), "value": hex(record.value)])
            }
        }
        return [
            "partition": partition,
            "entries": entries.sorted { $0.0 < $1.0 }.map(\.1),
            "completions": completions.sorted { $0.0 < $1.0 }.map(\.1),
            "otherRecords": others,
        ]
    }

    /// A plain `SCHEDULE` file, decoded as a reopen decodes it.
    package static func checkpoint(_ bytes: [UInt8], partition: String) throws -> [String: Any] {
        guard bytes.count >= StoreCheckpoint.fixedSize else { throw StoreCheckpoint.Rejection(reason: "cut short") }
        let headerSize = Int(bytes[12]) | Int(bytes[13]) << 8 | Int(bytes[14]) << 16 | Int(bytes[15]) << 24
        guard headerSize <= bytes.count else { throw StoreCheckpoint.Rejection(reason: "header cut short") }
        let header = try StoreCheckpoint.decodeHeader(Array(bytes[..<headerSize]))
        let body = Array(bytes[headerSize...])
        guard !header.sealed, body.count == header.bodySize, CRC32.checksum(body) == header.bodyCRC else {
            throw StoreCheckpoint.Rejection(reason: "sealed, or the body fails its size or CRC")
        }
        var scheduler = Scheduler(partition: partition, configuration: OutboxStoreConfiguration())
        _ = try StoreCheckpointBody.decode(body, into: &scheduler, nextSequence: header.nextSequence, sealed: false)
        let content = scheduler.checkpointContent
        var entries: [(UInt64, [String: Any])] = []
        content.entries.forEach { metadata in
            entries.append((metadata.sequence, checkpointEntry(metadata, content: content)))
        }
        let completions = content.completions.map { (hex($0.key.bytes), completion(id: hex($0.key.bytes), $0.value)) }
        return [
            "version": Int(StoreCheckpoint.version),
            "nextSequence": header.nextSequence,
            "position": [
                "sequence": header.position.sequence,
                "segments": header.position.segments.map { ["base": $0.base, "salt": $0.salt] },
            ] as [String: Any],
            "names": Dictionary(uniqueKeysWithValues: content.strings.all.map { ("\($0.id)", $0.name) }),
            "entries": entries.sorted { $0.0 < $1.0 }.map(\.1),
            "completions": completions.sorted { $0.0 < $1.0 }.map(\.1),
        ]
    }

    // MARK: Parts

    static func entry(_ body: EntryBody, state: EntryCodec.State?) -> [String: Any] {
        [
            "id": hex(body.id.bytes), "sequence": body.sequence, "createdAt": body.createdAt,
            "priority": Int(body.priority), "maxAttempts": Int(body.maxAttempts), "type": body.type,
            "scope": json(body.scope), "coalescingKey": json(body.coalescingKey), "partition": body.partition,
            "dependencies": body.dependencies.map { hex($0.bytes) }, "idempotencyKey": body.idempotencyKey,
            "keySuppliedByApp": body.keySuppliedByApp, "method": body.method, "endpoint": body.endpoint,
            "headers": body.headers.sorted { $0.key < $1.key }.map { [$0.key, $0.value] },
            "payload": Data(body.payload).base64EncodedString(),
            "state": state.map { state -> [String: Any] in
                [
                    "status": Int(state.status.code), "attempts": Int(state.attempts), "when": state.when,
                    "failures": failures(state.failure),
                ]
            } ?? NSNull(),
        ]
    }

    static func checkpointEntry(_ entry: EntryMetadata, content: Scheduler.CheckpointContent) -> [String: Any] {
        [
            "id": hex(entry.id.bytes), "sequence": entry.sequence, "when": entry.when, "createdAt": entry.createdAt,
            "storedBytes": Int(entry.storedBytes), "type": json(content.strings.name(entry.type)),
            "scope": json(content.strings.name(entry.scope)),
            "coalescingKey": json(content.strings.name(entry.coalescing)), "priority": Int(entry.priority),
            "attempts": Int(entry.attempts), "maxAttempts": Int(entry.maxAttempts), "status": Int(entry.status.code),
            "unchanged": content.pristine.contains(entry.id),
            "dependencies": (entry.dependencies ?? []).map { hex($0.bytes) },
            "appKey": json(content.appKeys[entry.id]),
            "failures": failures(content.failures[entry.id].flatMap { $0.isEmpty ? nil : $0 }),
        ]
    }

    static func completion(id: String, _ completion: Completion) -> [String: Any] {
        [
            "id": id, "syncedAt": completion.syncedAt, "serverID": json(completion.serverID),
            "appKey": json(completion.idempotencyKey),
        ]
    }

    /// `null` for fields 0, as the state record writes it.
    static func failures(_ info: FailureInfo?) -> Any {
        guard let info else { return NSNull() }
        let last: Any =
            info.last.map { failure -> [String: Any] in
                [
                    "cause": Int(failure.cause.code),
                    "fate": failure.dependency.map { Int($0.code) } ?? NSNull(),
                    "parent": failure.dependency.map { hex($0.parent.bytes) } ?? NSNull(),
                    "httpStatus": failure.httpStatus ?? -1, "message": json(failure.message),
                ]
            } ?? NSNull()
        return [
            "last": last, "firstAnswer": info.firstAnsweredAt ?? NSNull(),
            "outcomeUnknownSince": info.outcomeUnknownSince ?? NSNull(),
        ] as [String: Any]
    }

    static func json(_ text: String?) -> Any { text ?? NSNull() }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { LowercaseHex.encode(bytes) }
}
