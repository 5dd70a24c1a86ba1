import Foundation
import OutboxModel

/// The binary forms of an entry's body, state and completion in the log.
///
/// Body (the value record, written once):
/// ```
/// u8 version (1) · u8 flags (bit 1: idempotency key supplied by the app; bit 2: payload in a file;
///                            no other bit)
/// 16 id · u64 sequence · i64 createdAt (ms) · i16 priority · u16 maxAttempts
/// str type · str? scope · str? coalescingKey · str partition
/// u16 n · 16·n dependency ids · str idempotencyKey · str method
/// [payload file reference]   — only with bit 2 (``PayloadFileReference``, 61 bytes)
/// str endpoint · u16 m · m × (str name, str value) · data payload (empty with bit 2)
/// ```
/// State (the annotation, rewritten on every status change):
/// ```
/// u8 version (4) · u8 status · u16 attempts · i64 when (ms)
/// failures (``FailureCoding``: the last failure's cause, status and message; the first answer's and the
///           earliest unknown outcome's times)
/// ```
/// Completion (its own key): `u8 version · i64 syncedAt (ms) · str? serverID`,
/// then, in version 2 only (written when the app supplied the entry's
/// idempotency key), `str? idempotencyKey`; version 1 otherwise.
/// `str` is a u32 length and UTF-8; `str?` a u8 presence flag (0 or 1) then `str`.
///
/// Decoding accepts only what encoding writes — no unknown flag, no byte
/// left over, header names in ascending order without repeats, a failure
/// message of at most 2,048 characters, a version 2 completion only with its key —
/// so a record decodes to exactly what its bytes (vouched for by the log's
/// CRC) say, never to less.
package enum EntryCodec {
    static let version: UInt8 = 1
    /// Flag bit 0 is not used: a body with it set is refused.
    private static let appKeyFlag: UInt8 = 2
    /// The payload is in a file (``PayloadFileReference``); a build from
    /// before payload files refuses the record as corrupt rather than
    /// send an empty body.
    private static let payloadFileFlag: UInt8 = 4
    static let completionVersion: UInt8 = 2

    // MARK: Body

    /// The plain encoding (a sealed queue seals it whole: ``RecordFormat``),
    /// in one buffer of exactly the right size.
    package static func encode(_ body: EntryBody) -> [UInt8] {
        var writer = ByteWriter(capacity: headerSize(body) + sensitiveSize(body))
        writeHeader(body, into: &writer)
        writeSensitive(body, into: &writer)
        return writer.bytes
    }

    private static func writeHeader(_ body: EntryBody, into writer: inout ByteWriter) {
        writer.integer(version)
        writer.integer((body.keySuppliedByApp ? appKeyFlag : 0) | (body.payloadFile == nil ? 0 : payloadFileFlag))
        writer.uuid(body.id.uuid)
        writer.integer(body.sequence)
        writer.integer(body.createdAt)
        writer.integer(body.priority)
        writer.integer(body.maxAttempts)
        writer.string(body.type)
        writer.optionalString(body.scope)
        writer.optionalString(body.coalescingKey)
        writer.string(body.partition)
        writer.integer(UInt16(clamping: body.dependencies.count))
        for dependency in body.dependencies { writer.uuid(dependency.uuid) }
        writer.string(body.idempotencyKey)
        writer.string(body.method)
        body.payloadFile?.encode(into: &writer)
    }

    /// The endpoint, the headers (sorted by name) and the payload.
    private static func writeSensitive(_ body: EntryBody, into writer: inout ByteWriter) {
        writer.string(body.endpoint)
        writer.integer(UInt16(clamping: body.headers.count))
        if body.headers.count == 1, let (name, value) = body.headers.first {
            writer.string(name)
            writer.string(value)
        } else {
            for (name, value) in body.headers.sorted(by: { $0.key < $1.key }) {
                writer.string(name)
                writer.string(value)
            }
        }
        writer.data(body.payload)
    }

    private static func headerSize(_ body: EntryBody) -> Int {
        var size = 2 + 16 + 8 + 8 + 2 + 2 + 4 + body.type.utf8.count + 1 + (body.scope.map { 4 + $0.utf8.count } ?? 0)
        size += 1 + (body.coalescingKey.map { 4 + $0.utf8.count } ?? 0) + 4 + body.partition.utf8.count
        size += 2 + 16 * body.dependencies.count + 4 + body.idempotencyKey.utf8.count + 4 + body.method.utf8.count
        if body.payloadFile != nil { size += PayloadFileReference.encodedSize }
        return size
    }

    private static func sensitiveSize(_ body: EntryBody) -> Int {
        var size = 4 + body.endpoint.utf8.count + 2 + 4 + body.payload.count
        for (name, value) in body.headers { size += 8 + name.utf8.count + value.utf8.count }
        return size
    }

    /// The scheduling fields of a body, without decoding the request
    /// (endpoint, headers, payload), which scheduling never needs.
    package struct Header {
        package var body: EntryBody  // endpoint, headers and payload left empty
        var sensitive: [UInt8]
    }

    package static func decodeHeader(_ bytes: [UInt8]) throws(OutboxError) -> Header {
        do throws(ByteReader.Failure) {
            var reader = ByteReader(bytes)
            let version = try reader.integer(UInt8.self)
            guard version == Self.version else { throw ByteReader.Failure(reason: "unknown entry version \(version)") }
            let flags = try reader.integer(UInt8.self)
            guard flags & ~(appKeyFlag | payloadFileFlag) == 0 else { throw ByteReader.Failure(reason: "unknown entry flags \(flags)") }
            let id = OutboxEntryID(bytes: try reader.slice(16))
            let sequence = try reader.integer(UInt64.self)
            guard sequence <= EntryMetadata.sequenceLimit else {
                throw ByteReader.Failure(reason: "sequence number \(sequence) is beyond any a store reaches")
            }
            let createdAt = try reader.date("the creation date")
            let priority = try reader.integer(Int16.self)
            let maxAttempts = try reader.integer(UInt16.self)
            guard maxAttempts >= 1 else { throw ByteReader.Failure(reason: "maxAttempts is 0") }
            let type = try reader.string()
            let scope = try reader.optionalString()
            let coalescingKey = try reader.optionalString()
            let partition = try reader.string()
            var dependencies: [OutboxEntryID] = []
            for _ in 0..<(try reader.count(UInt16.self, eachAtLeast: 16)) { dependencies.append(OutboxEntryID(bytes: try reader.slice(16))) }
            let idempotencyKey = try reader.string()
            let method = try reader.string()
            let payloadFile = flags & payloadFileFlag != 0 ? try PayloadFileReference.decode(from: &reader) : nil
            let sensitive = try reader.raw(bytes.count - reader.offset)
            try reader.expectEnd()
            let body = EntryBody(
                id: id, sequence: sequence, createdAt: createdAt, priority: priority, maxAttempts: maxAttempts,
                type: type, scope: scope, coalescingKey: coalescingKey, partition: partition,
                dependencies: dependencies, idempotencyKey: idempotencyKey, keySuppliedByApp: flags & appKeyFlag != 0,
                method: method, endpoint: "",
                headers: [:], payload: [], payloadFile: payloadFile)
            return Header(body: body, sensitive: sensitive)
        } catch {
            throw OutboxError(.corruptEntry, "cannot decode an entry: \(error.reason)")
        }
    }

    /// The whole body, from its plain encoding.
    package static func decode(_ bytes: [UInt8]) throws(OutboxError) -> EntryBody {
        let header = try decodeHeader(bytes)
        var body = header.body
        do throws(ByteReader.Failure) {
            var reader = ByteReader(header.sensitive)
            body.endpoint = try reader.string()
            var previous: String?
            for _ in 0..<(try reader.integer(UInt16.self)) {
                let name = try reader.string()
                // Written sorted: a repeat would silently drop a value.
                if let previous, !(previous < name) { throw ByteReader.Failure(reason: "header \(name) repeated or out of order") }
                body.headers[name] = try reader.string()
                previous = name
            }
            body.payload = try reader.data()
            if body.payloadFile != nil, !body.payload.isEmpty {
                throw ByteReader.Failure(reason: "a payload both in the record and in a file")
            }
            try reader.expectEnd()
        } catch {
            throw OutboxError(.corruptEntry, "cannot decode the entry's request: \(error.reason)", entry: body.id)
        }
        return body
    }

    // MARK: State

    /// The state record's version: its failures are kept as causes
    /// (nothing was released, so no earlier version is read).
    static let stateVersion: UInt8 = 4

    package static func encodeState(_ metadata: EntryMetadata, failure: FailureInfo?) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + (failure?.last?.message?.utf8.count ?? 0))
        writer.integer(stateVersion)
        writer.integer(metadata.status.code)
        writer.integer(metadata.attempts)
        writer.integer(metadata.when)
        FailureCoding.encode(failure, into: &writer)
        return writer.bytes
    }

    package struct State {
        package var status: OutboxStatus
        package var attempts: UInt16
        package var when: Int64
        package var failure: FailureInfo?
    }

    package static func decodeState(_ bytes: [UInt8]) throws(OutboxError) -> State {
        do throws(ByteReader.Failure) {
            var reader = ByteReader(bytes)
            let version = try reader.integer(UInt8.self)
            guard version == stateVersion else { throw ByteReader.Failure(reason: "unknown state version \(version)") }
            let code = try reader.integer(UInt8.self)
            guard let status = OutboxStatus(code: code) else { throw ByteReader.Failure(reason: "unknown status \(code)") }
            let attempts = try reader.integer(UInt16.self)
            let when = try reader.date("the next attempt's time")
            let failure = try FailureCoding.decode(&reader)
            try reader.expectEnd()
            return State(status: status, attempts: attempts, when: when, failure: failure)
        } catch {
            throw OutboxError(.corruptEntry, "cannot decode an entry's state: \(error.reason)")
        }
    }

    // MARK: Completion

    package static func encodeCompletion(_ completion: Completion) -> [UInt8] {
        // Version 1 unless there is a key to keep, so that a store with no
        // app-supplied key stays readable by a build from before keys.
        var writer = ByteWriter(capacity: 32)
        writer.integer(completion.idempotencyKey == nil ? 1 : completionVersion)
        writer.integer(completion.syncedAt)
        writer.optionalString(completion.serverID)
        if let key = completion.idempotencyKey { writer.optionalString(key) }
        return writer.bytes
    }

    package static func decodeCompletion(_ bytes: [UInt8]) throws(OutboxError) -> Completion {
        do throws(ByteReader.Failure) {
            var reader = ByteReader(bytes)
            let version = try reader.integer(UInt8.self)
            guard version == 1 || version == completionVersion else {
                throw ByteReader.Failure(reason: "unknown completion version \(version)")
            }
            let syncedAt = try reader.date("the delivery time")
            let serverID = try reader.optionalString()
            let key = version >= 2 ? try reader.optionalString() : nil
            // Version 2 is written only to keep a key.
            if version >= 2 && key == nil { throw ByteReader.Failure(reason: "a version 2 completion without its key") }
            try reader.expectEnd()
            return Completion(serverID: serverID, syncedAt: syncedAt, idempotencyKey: key)
        } catch {
            throw OutboxError(.corruptEntry, "cannot decode a completion: \(error.reason)")
        }
    }
}
