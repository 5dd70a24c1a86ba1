import Foundation

/// One record of the key journal. Every record names its key, so any record
/// can be read alone (a replay reads exactly one).
///
/// Payload layout (little-endian), after the frame's kind byte:
///
/// ```
/// expires  i64  milliseconds since 1970: when the record may be forgotten
/// keyLen   u16, key bytes (UTF-8)
/// claim / unknown:  since i64 (ms), fpLen u16, fingerprint (SHA-256: 32 bytes)
/// complete:         fpLen u16, fingerprint, status u16, headerCount u16,
///                   (nameLen u16, name, valueLen u16, value)*, bodyLen u32, body
/// release:          nothing more
/// ```
package enum JournalRecord: Sendable, Hashable {
    /// The key was claimed; its handler may run from now on.
    case claim(key: String, fingerprint: [UInt8], since: Date, expiresAt: Date)
    /// The claim's request completed with `response`.
    case complete(key: String, fingerprint: [UInt8], response: StoredResponse, expiresAt: Date)
    /// The claim's handler ran but its response could not be recorded.
    case unknown(key: String, fingerprint: [UInt8], since: Date, expiresAt: Date)
    /// The claim was released (its handler applied nothing), or an
    /// operator resolved the key as not applied: it is free again.
    case release(key: String, expiresAt: Date)

    package enum Kind: UInt8, Sendable {
        case claim = 1, complete = 2, unknown = 3, release = 4
    }

    package var kind: Kind {
        switch self {
        case .claim: .claim
        case .complete: .complete
        case .unknown: .unknown
        case .release: .release
        }
    }

    var key: String {
        switch self {
        case .claim(let key, _, _, _), .complete(let key, _, _, _), .unknown(let key, _, _, _), .release(let key, _): key
        }
    }

    var expiresAt: Date {
        switch self {
        case .claim(_, _, _, let expiresAt), .complete(_, _, _, let expiresAt), .unknown(_, _, _, let expiresAt),
            .release(_, let expiresAt):
            expiresAt
        }
    }

    /// The payload (without the kind byte).
    package func encoded() -> [UInt8] {
        var out = ByteWriter()
        out.int64(Self.milliseconds(expiresAt))
        out.string16(key)
        switch self {
        case .claim(_, let fingerprint, let since, _), .unknown(_, let fingerprint, let since, _):
            out.int64(Self.milliseconds(since))
            out.bytes16(fingerprint)
        case .complete(_, let fingerprint, let response, _):
            out.bytes16(fingerprint)
            out.uint16(UInt16(clamping: response.status))
            let headers = response.headers.sorted { $0.key < $1.key }
            out.uint16(UInt16(headers.count))
            for (name, value) in headers {
                out.string16(name)
                out.string16(value)
            }
            out.uint32(UInt32(response.body.count))
            out.bytes.append(contentsOf: response.body)
        case .release:
            break
        }
        return out.bytes
    }

    /// Decodes a payload of `kind`; `nil` if it is malformed.
    package static func decode(kind rawKind: UInt8, payload: ArraySlice<UInt8>) -> JournalRecord? {
        guard let kind = Kind(rawValue: rawKind) else { return nil }
        var input = ByteReader(payload)
        guard let expires = input.int64(), let key = input.string16() else { return nil }
        let expiresAt = date(expires)
        switch kind {
        case .claim, .unknown:
            guard let since = input.int64(), let fingerprint = input.bytes16(), input.isAtEnd else { return nil }
            return kind == .claim
                ? .claim(key: key, fingerprint: fingerprint, since: date(since), expiresAt: expiresAt)
                : .unknown(key: key, fingerprint: fingerprint, since: date(since), expiresAt: expiresAt)
        case .complete:
            guard let fingerprint = input.bytes16(), let status = input.uint16(), let count = input.uint16() else { return nil }
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
            let response = StoredResponse(status: Int(status), headers: headers, body: body)
            return .complete(key: key, fingerprint: fingerprint, response: response, expiresAt: expiresAt)
        case .release:
            guard input.isAtEnd else { return nil }
            return .release(key: key, expiresAt: expiresAt)
        }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.up)
        // NaN compares false both ways: a date that is no time is long past.
        guard !value.isNaN else { return Int64.min }
        return value >= 9e18 ? Int64.max : value <= -9e18 ? Int64.min : Int64(value)
    }

    /// The `Date` that ``milliseconds(_:)`` gives back as `milliseconds`,
    /// so a record read and written again keeps its bytes. The nearest
    /// `Date` to `milliseconds / 1000` is not always it: `Date` counts from
    /// 2001, and ``milliseconds(_:)`` rounds up, so about one time in 25
    /// came back a millisecond later. A step or two (of the `Date`'s
    /// smallest) finds it for every time within ±10¹⁵ ms of 1970 and every
    /// time ``milliseconds(_:)`` gives (`Int64.max`, written for any date
    /// past it, included: it once read as `distantFuture`, written again
    /// as the year 4001); beyond, the nearest is kept, and what it is
    /// written as reads back as itself.
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

/// Appends little-endian values to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func uint16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func uint32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func uint64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func int64(_ value: Int64) { uint64(UInt64(bitPattern: value)) }
    /// Exactly `count` bytes: `value` cut or zero-padded.
    mutating func fixed(_ value: [UInt8], count: Int) {
        bytes.append(contentsOf: value.prefix(count))
        if value.count < count { bytes.append(contentsOf: repeatElement(0, count: count - value.count)) }
    }
    /// A u16 length and the bytes (at most 65535).
    mutating func bytes16(_ value: [UInt8]) {
        uint16(UInt16(min(value.count, Int(UInt16.max))))
        bytes.append(contentsOf: value.prefix(Int(UInt16.max)))
    }
    /// A u16 length and the UTF-8 bytes (cut at 65535 bytes).
    mutating func string16(_ value: String) {
        let utf8 = Array(value.utf8.prefix(Int(UInt16.max)))
        uint16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }
}

/// Reads little-endian values; every read returns `nil` past the end.
struct ByteReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { bytes.isEmpty }

    mutating func fixed(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count >= count else { return nil }
        defer { bytes = bytes.dropFirst(count) }
        return Array(bytes.prefix(count))
    }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        guard let raw = fixed(MemoryLayout<T>.size) else { return nil }
        return raw.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(as: T.self)) }
    }

    mutating func uint16() -> UInt16? { integer(UInt16.self) }
    mutating func uint32() -> UInt32? { integer(UInt32.self) }
    mutating func uint64() -> UInt64? { integer(UInt64.self) }
    mutating func int64() -> Int64? { uint64().map { Int64(bitPattern: $0) } }

    mutating func bytes16() -> [UInt8]? {
        guard let count = uint16() else { return nil }
        return fixed(Int(count))
    }

    mutating func string16() -> String? {
        guard let count = uint16(), let raw = fixed(Int(count)) else { return nil }
        return String(checkedUTF8: raw)
    }
}
