import Foundation
import IdempotencyKeyMiddleware

/// Fuzz entry point for the durable key store's record payloads
/// (``KeyStoreRecord``, Docs/STORE-FORMAT.md "The key store's records"): what a
/// `LogIdempotencyKeyStore` reads back from its log for a completed,
/// claimed or outcome-unknown key. See `FuzzViolation` and Fuzz/README.md.
///
/// What decodes must be what the bytes say: a payload that decodes encodes
/// back to exactly its bytes when its time is one a `Date` holds to the
/// millisecond (within ±10¹⁵ ms of 1970), and otherwise to bytes that read
/// back and encode to themselves.
package enum KeyRecordFuzzing {
    package static func record(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let payload = Array(input.data)
        guard let record = KeyStoreRecord.decode(payload) else { return }
        let encoded = record.encoded()
        guard let again = KeyStoreRecord.decode(encoded), again.encoded() == encoded else {
            throw FuzzViolation("a record read as \(record) is encoded as bytes that do not read back as themselves")
        }
        guard encoded == payload || !exactTime(record) else {
            throw FuzzViolation("a record read as \(record) encodes to other bytes")
        }
    }

    /// Whether the record's time is within ±10¹⁵ ms of 1970 (some 31,000
    /// years), where each millisecond has a `Date` of its own.
    static func exactTime(_ record: KeyStoreRecord) -> Bool {
        switch record {
        case .completed: true
        case .claim(_, _, let since, _), .unknown(_, _, let since, _): abs(since.timeIntervalSince1970 * 1000) <= 1e15
        }
    }

    /// One payload of each kind, behind control byte 0.
    package static func seeds() -> [[UInt8]] {
        let since = Date(timeIntervalSince1970: 1_767_225_600.25)
        let fingerprint = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let records: [KeyStoreRecord] = [
            .completed(
                key: "order-1", fingerprint: fingerprint,
                response: StoredResponse(
                    status: 201, headers: ["Content-Type": "application/json", "Location": "/orders/1"],
                    body: Array(#"{"id":1,"total":"12.50"}"#.utf8))),
            .completed(key: "empty", fingerprint: [], response: StoredResponse(status: 204, headers: [:], body: [])),
            .claim(key: "order-2", fingerprint: fingerprint, since: since, owner: "server-a"),
            .unknown(key: "order-3", fingerprint: fingerprint, since: since, reason: .responseNotRecorded),
            .unknown(key: "order-4", fingerprint: fingerprint, since: since, reason: .serverStopped),
            .unknown(key: "order-5", fingerprint: fingerprint, since: since, reason: .claimAbandoned),
        ]
        return records.map { [0] + $0.encoded() }
    }
}
