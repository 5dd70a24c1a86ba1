import Foundation
import OutboxLog

/// One record of the durable key store, as the payload of a value in its
/// ``OutboxLog`` (Docs/STORE-FORMAT.md, "The key store's records"). The log's
/// record carries the expiry; the payload names the client's key in full,
/// so a record read alone says whose it is.
///
/// A completed key lives under its settled log key (`s` + digest); a claim
/// or an unknown outcome under its unsettled one (`u` + digest), so an open
/// finds the few unsettled keys by their prefix without reading the rest.
///
/// ```
/// version u8 (1), kind u8, keyLen u16, key (UTF-8), fpLen u16, fingerprint,
/// completed (1): status u16, headerCount u16, (nameLen u16, name, valueLen u16, value)*
///                in name order, each name once, bodyLen u32, body
/// claim (2):     since i64 (ms since 1970), ownerLen u16, owner (UTF-8)
/// unknown (3):   since i64 (ms since 1970), reason u8 (1 response not recorded,
///                2 server stopped, 3 claim abandoned)
/// ```
package enum KeyStoreRecord: Sendable, Hashable {
    case completed(key: String, fingerprint: [UInt8], response: StoredResponse)
    case claim(key: String, fingerprint: [UInt8], since: Date, owner: String)
    case unknown(key: String, fingerprint: [UInt8], since: Date, reason: IdempotencyUnknownReason)

    static let version: UInt8 = 1
    /// The first byte of a completed key's log key.
    static let settledNamespace = UInt8(ascii: "s")
    /// The first byte of an unsettled key's log key.
    static let unsettledNamespace = UInt8(ascii: "u")

    var key: String {
        switch self {
        case .completed(let key, _, _), .claim(let key, _, _, _), .unknown(let key, _, _, _): key
        }
    }

    var isCompleted: Bool {
        if case .completed = self { true } else { false }
    }

    var fingerprint: [UInt8] {
        switch self {
        case .completed(_, let fingerprint, _), .claim(_, let fingerprint, _, _), .unknown(_, let fingerprint, _, _): fingerprint
        }
    }

    /// The record as the store keeps it in memory, with the log record's expiry.
    func keyRecord(expiresAt: Date) -> KeyRecord {
        switch self {
        case .completed(_, let fingerprint, let response):
            KeyRecord(fingerprint: fingerprint, state: .completed(response, expiresAt: expiresAt))
        case .claim(_, let fingerprint, let since, let owner):
            KeyRecord(fingerprint: fingerprint, state: .inProgress(since: since, owner: owner, expiresAt: expiresAt))
        case .unknown(_, let fingerprint, let since, let reason):
            KeyRecord(fingerprint: fingerprint, state: .outcomeUnknown(since: since, expiresAt: expiresAt, reason: reason))
        }
    }

    private enum Kind: UInt8 {
        case completed = 1, claim = 2, unknown = 3
    }

    private static let reasons: [IdempotencyUnknownReason: UInt8] = [
        .responseNotRecorded: 1, .serverStopped: 2, .claimAbandoned: 3,
    ]

    /// The reason's code on disk (1…3).
    static func reasonCode(_ reason: IdempotencyUnknownReason) -> UInt8 { reasons[reason]! }

    package func encoded() -> [UInt8] {
        var out = ByteWriter()
        out.bytes.append(Self.version)
        switch self {
        case .completed(let key, let fingerprint, let response):
            out.bytes.append(Kind.completed.rawValue)
            out.string16(key)
            out.bytes16(fingerprint)
            out.uint16(UInt16(clamping: response.status))
            let headers = response.headers.sorted { $0.key < $1.key }
            out.uint16(UInt16(clamping: headers.count))
            for (name, value) in headers.prefix(Int(UInt16.max)) {
                out.string16(name)
                out.string16(value)
            }
            out.uint32(UInt32(clamping: response.body.count))
            out.bytes.append(contentsOf: response.body)
        case .claim(let key, let fingerprint, let since, let owner):
            out.bytes.append(Kind.claim.rawValue)
            out.string16(key)
            out.bytes16(fingerprint)
            out.int64(KeyStoreTime.milliseconds(since))
            out.string16(owner)
        case .unknown(let key, let fingerprint, let since, let reason):
            out.bytes.append(Kind.unknown.rawValue)
            out.string16(key)
            out.bytes16(fingerprint)
            out.int64(KeyStoreTime.milliseconds(since))
            out.bytes.append(Self.reasons[reason]!)
        }
        return out.bytes
    }

    /// Decodes a payload; `nil` if it is not one this version writes.
    package static func decode(_ payload: [UInt8]) -> KeyStoreRecord? {
        var input = ByteReader(payload[...])
        guard input.fixed(1) == [version], let rawKind = input.fixed(1)?.first, let kind = Kind(rawValue: rawKind),
            let key = input.string16(), let fingerprint = input.bytes16()
        else { return nil }
        switch kind {
        case .completed:
            guard let status = input.uint16(), let count = input.uint16() else { return nil }
            var headers: [String: String] = [:]
            var previous: String?
            for _ in 0..<count {
                guard let name = input.string16(), let value = input.string16() else { return nil }
                // Written sorted, each name once (they come from a dictionary):
                // a repeated name would be dropped, another order re-encoded.
                if let previous, !(previous < name) { return nil }
                previous = name
                headers[name] = value
            }
            guard let length = input.uint32(), let body = input.fixed(Int(length)), input.isAtEnd else { return nil }
            return .completed(key: key, fingerprint: fingerprint, response: StoredResponse(status: Int(status), headers: headers, body: body))
        case .claim:
            guard let since = input.int64(), let owner = input.string16(), input.isAtEnd else { return nil }
            return .claim(key: key, fingerprint: fingerprint, since: KeyStoreTime.date(since), owner: owner)
        case .unknown:
            guard let since = input.int64(), let code = input.fixed(1)?.first, input.isAtEnd,
                let reason = reasons.first(where: { $0.value == code })?.key
            else { return nil }
            return .unknown(key: key, fingerprint: fingerprint, since: KeyStoreTime.date(since), reason: reason)
        }
    }
}

/// Times in records: milliseconds since 1970, rounded up.
enum KeyStoreTime {
    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.up)
        // NaN compares false both ways: a date that is no time is long past.
        guard !value.isNaN else { return Int64.min }
        return value >= 9e18 ? Int64.max : value <= -9e18 ? Int64.min : Int64(value)
    }

    /// The `Date` that ``milliseconds(_:)`` gives back as `milliseconds`, so
    /// a record read and written again keeps its bytes: the nearest `Date`
    /// to `milliseconds / 1000` is not always it (`Date` counts from 2001,
    /// and rounding up lands a millisecond later about one time in 25); a
    /// step or two of its smallest unit finds it within ±10¹⁵ ms of 1970.
    static func date(_ milliseconds: Int64) -> Date {
        var date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        for _ in 0..<16 where Self.milliseconds(date) > milliseconds {
            date = Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextDown)
        }
        for _ in 0..<16 where Self.milliseconds(date) < milliseconds {
            date = Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextUp)
        }
        return date
    }
}
