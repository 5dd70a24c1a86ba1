import Foundation
import IdempotencyKeyMiddleware
import PostgresNIO

/// A key's row, read into the record every store decides requests with
/// (`KeyRecord.decide`), with the revision that guards a change to it.
struct PostgresKeyRow {
    var record: KeyRecord
    var revision: Int64

    /// The columns ``decode(_:table:)`` reads, in order.
    static let columns = "fingerprint, state, owner, since, expires_at, reason, status, headers::text, body, revision"

    static func decode(_ row: PostgresRow, table: String) throws -> PostgresKeyRow {
        let (fingerprint, state, owner, since, expiresAt, reasonText, status, headers, body, revision) = try row.decode(
            (ByteBuffer, String, String?, Date, Date, String?, Int32?, String?, ByteBuffer?, Int64).self)
        func damaged(_ what: String) -> PostgresIdempotencyKeyStoreError {
            PostgresIdempotencyKeyStoreError(.damagedRow, "a \(state) row of \(table) \(what)")
        }
        let decoded: KeyRecord.State
        switch state {
        case "in-progress":
            guard let owner else { throw damaged("has no owner") }
            decoded = .inProgress(since: since, owner: owner, expiresAt: expiresAt)
        case "completed":
            guard let status, let body else { throw damaged("has no status or body") }
            decoded = .completed(
                StoredResponse(status: Int(status), headers: try decodeHeaders(headers ?? "{}", table: table), body: Array(buffer: body)),
                expiresAt: expiresAt)
        case "unknown":
            guard let reason = reasonText.flatMap(IdempotencyUnknownReason.init(rawValue:)) else { throw damaged("has no known reason") }
            decoded = .outcomeUnknown(since: since, expiresAt: expiresAt, reason: reason)
        default:
            throw damaged("has an unknown state")
        }
        return PostgresKeyRow(record: KeyRecord(fingerprint: Array(buffer: fingerprint), state: decoded), revision: revision)
    }

    /// Replayed headers as a JSON object (stored as `jsonb`).
    static func encodeHeaders(_ headers: [String: String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(headers), as: UTF8.self)
    }

    static func decodeHeaders(_ text: String, table: String) throws -> [String: String] {
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(text.utf8))
        } catch {
            throw PostgresIdempotencyKeyStoreError(.damagedRow, "a completed row of \(table) has headers that are not a JSON object of strings")
        }
    }
}
