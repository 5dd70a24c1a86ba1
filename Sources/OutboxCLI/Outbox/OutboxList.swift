import ArgumentParser
import Foundation
import Outbox

/// `outbox list DIR [--user U] [--status S]... [--json]`
struct OutboxList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print a user's entries in sequence order.",
        discussion: """
            One line per entry: sequence, status, attempts/maxAttempts, method and endpoint, type, \
            scope, id, and the next attempt time and last error when there are any. With --json, \
            one object per line with sorted keys: id, idempotencyKey, type, method, endpoint, \
            status, attempts, maxAttempts, scope, dependencies, priority, sequence, nextAttemptAt, \
            lastFailure (an object: cause, httpStatus, message, and for a dependency parent and \
            parentFate), serverID, createdAt, syncedAt (dates in ISO 8601, absent \
            values null), plus user, coalescingKey, storedBytes, payloadBytes, outcomeUnknownSince \
            (when the earliest attempt whose answer was lost was made), reason (what holds it, a \
            stable name: see explain) and why (that in one sentence; the text lines end with it). \
            A user without a queue lists nothing. \
            Note: opening a queue is a write: entries a crash left in flight go back to pending \
            (with that attempt counted), exactly as the app's own open would. DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Option(help: "The user (partition) whose entries to list.")
    var user = "default"

    @Option(
        help: ArgumentHelp(
            "Only entries in these statuses: pending, inFlight, waitingToRetry, quarantined, conflict, succeeded.",
            discussion: "Repeat the option or separate statuses with commas.",
            valueName: "status"))
    var status: [String] = []

    @Flag(help: "Print one JSON object per entry and line.")
    var json = false

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        _ = try Self.parseStatuses(status)
    }

    func run() async throws {
        let statuses = try Self.parseStatuses(status)
        try options.requireExistingDirectory()
        try options.requireKeyIfEncrypted()
        guard options.partitions().contains(user) else { return }
        let (entries, explanations) = try await options.withStore(user: user, create: false) { store in
            let entries = try await store.entries(matching: OutboxFilter(statuses: statuses))
            let now = Date()
            var explanations: [OutboxExplanation] = []
            explanations.reserveCapacity(entries.count)
            for entry in entries { explanations.append(try await store.explain(entry.id, at: now)) }
            return (entries, explanations)
        }
        let encoder = JSONLines()
        var output = OutputBuffer()
        for (entry, why) in zip(entries, explanations) {
            output.line(json ? try encoder.encode(OutboxEntryJSON(entry, why: why)) : Self.line(for: entry, why: why))
        }
        output.flush()
    }

    /// The statuses named by `--status` options (each may hold several,
    /// comma-separated; case does not matter), or `nil` for all.
    static func parseStatuses(_ values: [String]) throws(ValidationError) -> Set<OutboxStatus>? {
        guard !values.isEmpty else { return nil }
        var result: Set<OutboxStatus> = []
        for value in values {
            for name in value.split(separator: ",", omittingEmptySubsequences: false) {
                let name = name.trimmingCharacters(in: .whitespaces)
                guard let status = OutboxStatus(name: name) else {
                    let known = OutboxStatus.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ValidationError("unknown status \"\(name)\" in --status: expected one of \(known)")
                }
                result.insert(status)
            }
        }
        return result
    }

    /// `<sequence>  <status>  <attempts>/<max>  <method> <endpoint>  <type>  scope=<scope|->  <id>[  next <date>][  error: …][  why: …]`
    static func line(for entry: OutboxEntry, why: OutboxExplanation? = nil) -> String {
        var line = "\(entry.sequence)  \(entry.status.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))"
        line += "  \(entry.attempts)/\(entry.maxAttempts)  \(entry.method) \(entry.endpoint)  \(entry.type)"
        line += "  scope=\(entry.scope ?? "-")  \(entry.id)"
        if entry.status == .waitingToRetry || entry.status == .inFlight {
            line += "  next \(OutboxEntryJSON.date(entry.nextAttemptAt))"
        }
        if let failure = entry.lastFailure { line += "  error: \(oneLine(failure.description))" }
        if let why, entry.status != .succeeded { line += "  why: \(oneLine(why.description))" }
        return line
    }
}

/// One ``OutboxEntry`` as JSON: every field, absent values as `null`,
/// dates in ISO 8601 with milliseconds.
struct OutboxEntryJSON: Encodable {
    var entry: OutboxEntry
    var why: OutboxExplanation?

    init(_ entry: OutboxEntry, why: OutboxExplanation? = nil) {
        self.entry = entry
        self.why = why
    }

    enum CodingKeys: String, CodingKey {
        case id, idempotencyKey, type, method, endpoint, status, attempts, maxAttempts, scope, dependencies
        case priority, sequence, nextAttemptAt, lastFailure, serverID, createdAt, syncedAt
        case user, coalescingKey, storedBytes, payloadBytes, outcomeUnknownSince, reason, why
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entry.id.description, forKey: .id)
        try container.encode(entry.idempotencyKey, forKey: .idempotencyKey)
        try container.encode(entry.type, forKey: .type)
        try container.encode(entry.method, forKey: .method)
        try container.encode(entry.endpoint, forKey: .endpoint)
        try container.encode(entry.status.rawValue, forKey: .status)
        try container.encode(entry.attempts, forKey: .attempts)
        try container.encode(entry.maxAttempts, forKey: .maxAttempts)
        try container.encode(entry.scope, forKey: .scope)
        try container.encode(entry.dependencies.map(\.description), forKey: .dependencies)
        try container.encode(entry.priority, forKey: .priority)
        try container.encode(entry.sequence, forKey: .sequence)
        try container.encode(Self.date(entry.nextAttemptAt), forKey: .nextAttemptAt)
        try container.encode(entry.lastFailure.map(OutboxFailureJSON.init), forKey: .lastFailure)
        try container.encode(entry.serverID, forKey: .serverID)
        try container.encode(Self.date(entry.createdAt), forKey: .createdAt)
        try container.encode(entry.syncedAt.map(Self.date), forKey: .syncedAt)
        try container.encode(entry.partition, forKey: .user)
        try container.encode(entry.coalescingKey, forKey: .coalescingKey)
        try container.encode(entry.storedBytes, forKey: .storedBytes)
        try container.encode(entry.payload.count, forKey: .payloadBytes)
        try container.encode(entry.outcomeUnknownSince.map(Self.date), forKey: .outcomeUnknownSince)
        if let why {
            try container.encode(why.reason.name, forKey: .reason)
            try container.encode(why.description, forKey: .why)
        }
    }

    /// `2025-01-31T12:34:56.789Z`
    static func date(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}

/// An ``OutboxFailure`` as JSON: `cause` (``OutboxFailure/Cause/name``),
/// `httpStatus` and `message` (`null` when absent), and for a dependency
/// failure `parent` and `parentFate` (``OutboxDependencyFailure/name``).
struct OutboxFailureJSON: Encodable {
    var failure: OutboxFailure

    init(_ failure: OutboxFailure) { self.failure = failure }

    enum CodingKeys: String, CodingKey { case cause, httpStatus, message, parent, parentFate }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(failure.cause.name, forKey: .cause)
        try container.encode(failure.httpStatus, forKey: .httpStatus)
        try container.encode(failure.message, forKey: .message)
        if case .dependency(let dependency) = failure.cause {
            try container.encode(dependency.parent.description, forKey: .parent)
            try container.encode(dependency.name, forKey: .parentFate)
        }
    }
}
