import Foundation
import OutboxLog
import OutboxModel

/// What a store accepts from its caller: every value is checked here,
/// before the scheduler or the log changes, so a refused call changes
/// nothing and leaves the store usable (the bounds are ``/OutboxModel/OutboxLimits``).
///
/// The checks that need the partition's state (dependencies, duplicates,
/// capacity) stay in ``Scheduler``; these need only the values.
enum Admission {
    private static func reject(_ message: String, entry: OutboxEntryID? = nil) -> OutboxError {
        OutboxError(.invalidArgument, message, entry: entry)
    }

    // MARK: Enqueue requests

    /// The request's own fields: names, HTTP method, endpoint, headers,
    /// numbers, dates and the idempotency key.
    static func check(_ request: OutboxEnqueueRequest) throws(OutboxError) {
        let id = request.id
        try name(request.type, "type", entry: id)
        if let scope = request.scope { try name(scope, "scope", entry: id) }
        if let key = request.coalescingKey { try name(key, "coalescingKey", entry: id) }
        guard !request.method.isEmpty, request.method.utf8.count <= 32, request.method.utf8.allSatisfy(isTokenCharacter) else {
            throw reject("method \"\(request.method.prefix(40))\" is not an HTTP method", entry: id)
        }
        try endpoint(request.endpoint, entry: id)
        try headers(request.headers, entry: id)
        if let attempts = request.maxAttempts, !OutboxLimits.attempts.contains(attempts) {
            throw reject("maxAttempts is \(attempts); it must be in \(OutboxLimits.attempts)", entry: id)
        }
        guard OutboxLimits.priorities.contains(request.priority) else {
            throw reject("priority is \(request.priority); it must be in \(OutboxLimits.priorities)", entry: id)
        }
        guard request.dependencies.count <= OutboxLimits.maximumDependencies else {
            throw reject(
                "\(request.dependencies.count) dependencies; at most \(OutboxLimits.maximumDependencies) are allowed", entry: id)
        }
        if request.dependencies.contains(id) { throw reject("an entry cannot depend on itself", entry: id) }
        _ = try milliseconds(request.createdAt, "createdAt", entry: id)
        if let key = request.idempotencyKey { try idempotencyKey(key, entry: id) }
    }

    /// The payload alone cannot exceed the record limit (checked before the
    /// entry is encoded, so a huge payload costs no copy; one that goes to a
    /// file and may be JSON is scanned for references, see
    /// ``noReferences(inFileBody:)``); the encoded record
    /// is checked by ``recordSize(_:limit:entry:)``. A payload that goes to a
    /// file (above `largePayloadThreshold`) has the file's limit instead.
    static func payloadSize(_ request: OutboxEnqueueRequest, configuration: OutboxStoreConfiguration) throws(OutboxError) {
        let size = request.payload.count
        if goesToFile(size, configuration) {
            let limit = configuration.maximumPayloadBytes
            if size > limit {
                throw OutboxError(
                    .tooLarge,
                    "the entry is too large: its payload takes \(size) bytes, and a payload file holds at most \(limit) bytes "
                        + "(OutboxStoreConfiguration.maximumPayloadBytes); nothing was written",
                    entry: request.id)
            }
            try noReferences(inFileBody: request)
            return
        }
        try payloadSize(request, limit: configuration.log.maximumRecordSize)
    }

    /// A body kept in a payload file is streamed as it was enqueued, so a
    /// `local:` reference in it would reach the server unreplaced: refused
    /// (the same rule in both stores, though the in-memory one keeps the body).
    ///
    /// References are string values of a JSON body (``/OutboxModel/LocalReferenceRemapper``),
    /// so a body that cannot be a JSON object, array or string — a photo, any
    /// binary — is passed by looking at its first bytes, never parsed or
    /// copied. A large JSON body is parsed once here, as its delivery would.
    static func noReferences(inFileBody request: OutboxEnqueueRequest) throws(OutboxError) {
        guard mayBeJSONWithStrings(request.payload) else { return }
        let inBody = LocalReferenceRemapper.references(endpoint: "", payload: request.payload)
        guard let first = inBody.min() else { return }
        throw reject(
            "its payload (\(request.payload.count) bytes) is above OutboxStoreConfiguration.largePayloadThreshold, so it "
                + "is kept in a file and sent as enqueued, and it holds \(first.localReference), which would reach the "
                + "server unreplaced: put the reference in the endpoint, or raise largePayloadThreshold so the body "
                + "stays in the record; nothing was written",
            entry: request.id)
    }

    /// Whether `payload`, after an optional byte-order mark and whitespace,
    /// starts like a JSON object, array or string.
    static func mayBeJSONWithStrings(_ payload: [UInt8]) -> Bool {
        var index = payload.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while index < payload.count, [0x20, 0x09, 0x0A, 0x0D].contains(payload[index]) { index += 1 }
        guard index < payload.count else { return false }
        return [UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\"")].contains(payload[index])
    }

    /// The payload must fit a record of `limit` bytes: for a payload kept
    /// inline, and for a spooled enqueue (spools take no payload files).
    static func payloadSize(_ request: OutboxEnqueueRequest, limit: Int) throws(OutboxError) {
        if request.payload.count > limit { throw tooLarge(request.payload.count, what: "its payload", limit: limit, entry: request.id) }
    }

    /// Whether a payload of `size` bytes is kept in a file.
    static func goesToFile(_ size: Int, _ configuration: OutboxStoreConfiguration) -> Bool {
        configuration.largePayloadThreshold.map { size > $0 } ?? false
    }

    /// The entry's encoded record (`frameSize`: what the log writes) must fit
    /// the log's record limit.
    static func recordSize(_ frameSize: Int, limit: Int, entry: OutboxEntryID) throws(OutboxError) {
        if frameSize > limit { throw tooLarge(frameSize, what: "its record", limit: limit, entry: entry) }
    }

    private static func tooLarge(_ size: Int, what: String, limit: Int, entry: OutboxEntryID) -> OutboxError {
        OutboxError(
            .tooLarge,
            "the entry is too large: \(what) takes \(size) bytes, and a record holds at most \(limit) bytes "
                + "(OutboxStoreConfiguration.log.maximumRecordSize); nothing was written",
            entry: entry)
    }

    private static func name(_ value: String, _ field: String, entry: OutboxEntryID) throws(OutboxError) {
        if value.isEmpty { throw reject("\(field) is empty\(field == "type" ? "" : "; use nil for none")", entry: entry) }
        let bytes = value.utf8.count
        if bytes > OutboxLimits.maximumNameBytes {
            throw reject("\(field) takes \(bytes) bytes; at most \(OutboxLimits.maximumNameBytes) are allowed", entry: entry)
        }
    }

    private static func endpoint(_ endpoint: String, entry: OutboxEntryID) throws(OutboxError) {
        guard endpoint.hasPrefix("/") else { throw reject("endpoint \"\(endpoint.prefix(80))\" must start with /", entry: entry) }
        let bytes = endpoint.utf8.count
        if bytes > OutboxLimits.maximumEndpointBytes {
            throw reject("the endpoint takes \(bytes) bytes; at most \(OutboxLimits.maximumEndpointBytes) are allowed", entry: entry)
        }
        if endpoint.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            throw reject("the endpoint contains a space or a control character", entry: entry)
        }
    }

    /// Set by the transport or the token provider, never by an entry.
    private static let reservedHeaders: [String: String] = [
        "authorization": "carries a secret; auth comes from the token provider at send time",
        "proxy-authorization": "carries a secret; auth comes from the token provider at send time",
        "cookie": "carries a secret; auth comes from the token provider at send time",
        "idempotency-key": "is the entry's idempotencyKey; pass it there",
        "content-length": "is set by the transport",
        "transfer-encoding": "is set by the transport",
        "host": "is set by the transport",
        "connection": "is set by the transport",
    ]

    private static func headers(_ headers: [String: String], entry: OutboxEntryID) throws(OutboxError) {
        if headers.count > OutboxLimits.maximumHeaderCount {
            throw reject("\(headers.count) headers; at most \(OutboxLimits.maximumHeaderCount) are allowed", entry: entry)
        }
        var total = 0
        var seen: Set<String> = []
        for (name, value) in headers {
            let lowered = name.lowercased()
            if let reason = reservedHeaders[lowered] { throw reject("header \(name) \(reason)", entry: entry) }
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenCharacter) else {
                throw reject("header name \"\(name.prefix(40))\" is not an HTTP token", entry: entry)
            }
            // Field values: visible characters, spaces and tabs; never CR, LF or NUL.
            if value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                throw reject("header \(name) contains a control character (CR, LF, NUL, …)", entry: entry)
            }
            // (One header cannot repeat: no set to allocate for the common case.)
            guard headers.count == 1 || seen.insert(lowered).inserted else {
                throw reject("header \(name) is given twice", entry: entry)
            }
            total += name.utf8.count + value.utf8.count
        }
        if total > OutboxLimits.maximumHeaderBytes {
            throw reject("the headers take \(total) bytes; at most \(OutboxLimits.maximumHeaderBytes) are allowed", entry: entry)
        }
    }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    static func idempotencyKey(_ key: String, entry: OutboxEntryID?) throws(OutboxError) {
        let length = key.utf8.count
        guard OutboxLimits.idempotencyKeyLength.contains(length), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw reject(
                "the idempotency key must be \(OutboxLimits.idempotencyKeyLength.lowerBound) to "
                    + "\(OutboxLimits.idempotencyKeyLength.upperBound) visible ASCII characters (no spaces)",
                entry: entry)
        }
    }

    // MARK: Other calls

    static func serverID(_ serverID: String?, entry: OutboxEntryID) throws(OutboxError) {
        guard let serverID, serverID.utf8.count > OutboxLimits.maximumServerIDBytes else { return }
        throw reject(
            "the server id takes \(serverID.utf8.count) bytes; at most \(OutboxLimits.maximumServerIDBytes) are kept", entry: entry)
    }

    /// `date` in milliseconds since 1970, if it is a date the store can keep.
    /// A failure handed to the store: a status an answer can have, and no
    /// dependency failure (the store records those itself, on the
    /// dependents of what it quarantines or removes).
    static func failure(_ failure: OutboxFailure, entry: OutboxEntryID) throws(OutboxError) {
        if let status = failure.httpStatus, !OutboxFailure.httpStatuses.contains(status) {
            throw reject("HTTP status \(status) is not 100…999", entry: entry)
        }
        if failure.dependency != nil { throw reject("a dependency failure is recorded by the store itself", entry: entry) }
    }

    static func milliseconds(_ date: Date, _ name: String, entry: OutboxEntryID? = nil) throws(OutboxError) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, OutboxLimits.dates.contains(date) else {
            throw reject("\(name) (\(seconds) s since 1970) is not a date between the years 1 and 9999", entry: entry)
        }
        return date.milliseconds
    }

    /// `duration` in milliseconds, if it is neither negative nor longer than
    /// ``/OutboxModel/OutboxLimits/maximumDuration``.
    static func milliseconds(_ duration: Duration, _ name: String) throws(OutboxError) -> Int64 {
        guard duration >= .zero, duration <= OutboxLimits.maximumDuration else {
            throw reject("\(name) is \(duration); it must be between 0 and \(OutboxLimits.maximumDuration)")
        }
        return duration.milliseconds
    }

    // MARK: Configuration

    /// A store configuration whose values are all in range.
    static func check(_ configuration: OutboxStoreConfiguration) throws(OutboxError) {
        func field(_ name: String) -> String { "OutboxStoreConfiguration.\(name)" }
        if let maximum = configuration.maximumEntries, maximum < 1 {
            throw reject("\(field("maximumEntries")) is \(maximum); it must be at least 1 (or nil: no limit)")
        }
        if let maximum = configuration.maximumBytes, maximum < 1 {
            throw reject("\(field("maximumBytes")) is \(maximum); it must be at least 1 (or nil: no limit)")
        }
        if !OutboxLimits.attempts.contains(configuration.defaultMaximumAttempts) {
            throw reject(
                "\(field("defaultMaximumAttempts")) is \(configuration.defaultMaximumAttempts); it must be in \(OutboxLimits.attempts)")
        }
        if let retention = configuration.succeededRetention { _ = try milliseconds(retention, field("succeededRetention")) }
        _ = try milliseconds(configuration.mappingRetention, field("mappingRetention"))
        if let threshold = configuration.largePayloadThreshold, threshold < 0 {
            throw reject("\(field("largePayloadThreshold")) is \(threshold); it must be at least 0 (or nil: no payload files)")
        }
        if !(1...OutboxLimits.maximumPayloadFileBytes).contains(configuration.maximumPayloadBytes) {
            throw reject(
                "\(field("maximumPayloadBytes")) is \(configuration.maximumPayloadBytes); it must be in 1...\(OutboxLimits.maximumPayloadFileBytes)")
        }
    }
}
