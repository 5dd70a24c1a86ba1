import ArgumentParser
import Foundation
import Outbox

/// `outbox explain DIR ID [--user U] [--json]`
struct OutboxExplain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Say in one sentence why an entry has not gone out yet (or that it has), and what would move it.",
        discussion: """
            ID is the entry's id or its local: reference. The store's view: its retry time, the head \
            of its scope it waits behind, a parent not delivered yet, a person's decision \
            (quarantined, conflict); an app's dispatcher adds its own state (paused, offline, \
            stopped, no handler) through OutboxDispatcher.explain(_:). With --json, one object with \
            sorted keys: id, status, type, reason and remedy (stable names), waitsFor (the other \
            entry it waits for, or null), nextAttemptAt, lastFailure (as in list --json) and why \
            (the sentence). An id the queue does not know is explained too (reason "unknown"). \
            Note: opening a queue is a write: entries a crash left in flight go back to pending \
            (with that attempt counted), exactly as the app's own open would. DIR is never created.
            """
    )

    @OptionGroup var options: OutboxRootOptions

    @Argument(help: "The entry's id (a UUID) or local: reference.")
    var id: String

    @Option(help: "The user (partition) whose queue holds the entry.")
    var user = "default"

    @Flag(help: "Print the explanation as one JSON object.")
    var json = false

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard OutboxEntry.ID(id) != nil else { throw ValidationError("\"\(id)\" is not an entry id (a UUID or local: reference)") }
    }

    func run() async throws {
        guard let entryID = OutboxEntry.ID(id) else { throw ValidationError("\"\(id)\" is not an entry id") }
        try options.requireExistingDirectory()
        try options.requireKeyIfEncrypted()
        var explanation = OutboxExplanation(id: entryID, status: nil, reason: .unknown)
        if options.partitions().contains(user) {
            explanation = try await options.withStore(user: user, create: false) { store in
                try await store.explain(entryID, at: Date())
            }
        }
        StandardStreams.writeLine(json ? try JSONLines().encode(OutboxExplanationJSON(explanation)) : "\(entryID): \(explanation)")
    }
}

/// An ``OutboxExplanation`` as JSON (see ``OutboxExplain``'s discussion).
struct OutboxExplanationJSON: Encodable {
    var explanation: OutboxExplanation

    init(_ explanation: OutboxExplanation) { self.explanation = explanation }

    enum CodingKeys: String, CodingKey { case id, status, type, reason, remedy, waitsFor, nextAttemptAt, lastFailure, why }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(explanation.id.description, forKey: .id)
        try container.encode(explanation.status?.rawValue, forKey: .status)
        try container.encode(explanation.type, forKey: .type)
        try container.encode(explanation.reason.name, forKey: .reason)
        try container.encode(explanation.remedy.name, forKey: .remedy)
        try container.encode(explanation.waitsFor?.description, forKey: .waitsFor)
        try container.encode(explanation.nextAttemptAt.map(OutboxEntryJSON.date), forKey: .nextAttemptAt)
        try container.encode(explanation.lastFailure.map(OutboxFailureJSON.init), forKey: .lastFailure)
        try container.encode(explanation.description, forKey: .why)
    }
}
