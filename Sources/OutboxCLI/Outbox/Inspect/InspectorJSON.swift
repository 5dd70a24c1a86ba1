import Foundation
import Outbox

/// What `GET /api/queue` answers: the queue's picture (the snapshot's JSON,
/// times in milliseconds since 1970) and where it came from.
struct InspectorQueueJSON: Encodable {
    var user: String
    var directory: String
    /// Where the picture came from, in words (``QueueReader/View/source``).
    var source: String
    var actionsAllowed: Bool
    /// Writes delivered per second over the last 10 seconds.
    var drainRate: Double
    var snapshot: OutboxQueueSnapshot
}

/// What `GET /api/entries/ID` answers (see ``InspectorEntryDetail``).
struct InspectorEntryJSON: Encodable {
    var detail: InspectorEntryDetail
    var actionsAllowed: Bool

    enum CodingKeys: String, CodingKey { case id, source, readFromQueue, actionsAllowed, entry, explanation, waiting, attempts }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(detail.id.description, forKey: .id)
        try container.encode(detail.source, forKey: .source)
        try container.encode(detail.readFromQueue, forKey: .readFromQueue)
        try container.encode(actionsAllowed, forKey: .actionsAllowed)
        try container.encode(detail.entry.map { OutboxEntryJSON($0) }, forKey: .entry)
        try container.encode(detail.explanation.map(OutboxExplanationJSON.init), forKey: .explanation)
        try container.encode(detail.waiting, forKey: .waiting)
        try container.encode(detail.attempts, forKey: .attempts)
    }
}

/// What an action answers: the entries it moved besides the one named.
struct InspectorActionJSON: Encodable {
    var action: String
    var id: String
    var dependents: [String]
}

/// An error as the page shows it.
struct InspectorErrorJSON: Encodable {
    var error: String
}

enum InspectorJSON {
    /// JSON with sorted keys and dates in milliseconds since 1970 (as the snapshot's file).
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers and dates only: encoding cannot fail; an empty object stands in if it ever did.
        return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
    }
}
