import Foundation

/// Where ``HTTPOutboxHandler`` sends an entry's idempotency key
/// (``HTTPOutboxHandler/Configuration/idempotencyKeyPlacement``).
public enum IdempotencyKeyPlacement: Sendable, Hashable {
    /// In a request header of this name: `Idempotency-Key` by default (the
    /// IETF draft, Stripe), or the server's own (`X-Idempotency-Key`,
    /// `X-Request-Id`…). It must be an HTTP field name, and not one the
    /// handler or HTTP sets (`Authorization`, `Content-Length`, `Host`…):
    /// otherwise nothing is sent and every attempt is
    /// ``OutboxOutcome/notSent(reason:)`` (retried, never quarantined, the
    /// reason in the entry's last error) until the app is fixed. A stored
    /// header of the same name is never sent in its place.
    case header(String)
    /// As a string member of this name in the JSON object body, for APIs
    /// that read the key from the request (`{"request_id": "…", …}`). The
    /// member is inserted right after the body's opening brace; the app's
    /// bytes are otherwise sent as they are, so every attempt sends the
    /// same bytes. A body that is not a JSON object, or that already has a
    /// member of that name, is never sent: the attempt is permanent.
    case jsonBodyMember(String)

    /// `Idempotency-Key`.
    public static let standard = IdempotencyKeyPlacement.header("Idempotency-Key")
}

/// Why the key could not be placed as configured: the request is not sent.
struct KeyPlacementError: Error, CustomStringConvertible {
    var description: String
    /// The configuration is at fault (a header name that cannot be sent),
    /// not the entry: every entry would fail the same way until the app is
    /// fixed, so none of them is quarantined for it.
    var isConfiguration = false
}

extension IdempotencyKeyPlacement {
    /// Headers that HTTP or the handler itself sets: a key header cannot be one.
    static let handlerHeaders = HTTPOutboxHandler.reservedHeaders.subtracting(["idempotency-key"])

    /// The header name a key goes in, checked; `nil` for a key in the body.
    func headerName() throws(KeyPlacementError) -> String? {
        guard case .header(let name) = self else { return nil }
        guard !name.isEmpty, name.utf8.allSatisfy(Self.isTokenCharacter) else {
            throw KeyPlacementError(
                description: "the idempotency key header name \"\(name)\" is not an HTTP field name: not sent", isConfiguration: true)
        }
        guard !Self.handlerHeaders.contains(name.lowercased()) else {
            throw KeyPlacementError(
                description: "the idempotency key cannot go in the \(name) header (HTTP or the handler sets it): not sent",
                isConfiguration: true)
        }
        return name
    }

    /// `body` with the key as its JSON member `name` (for `.jsonBodyMember`),
    /// or `body` unchanged.
    func body(_ body: [UInt8], key: String) throws(KeyPlacementError) -> [UInt8] {
        guard case .jsonBodyMember(let name) = self else { return body }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let brace = body.firstIndex(where: { !Self.isJSONWhitespace($0) }), body[brace] == UInt8(ascii: "{")
        else {
            throw KeyPlacementError(
                description: "the idempotency key goes in the JSON member \"\(name)\", but the body is not a JSON object: not sent")
        }
        guard object[name] == nil else {
            throw KeyPlacementError(
                description: "the idempotency key goes in the JSON member \"\(name)\", which the body already has: not sent")
        }
        let isEmpty = body[(brace + 1)...].first(where: { !Self.isJSONWhitespace($0) }) == UInt8(ascii: "}")
        var member = Self.jsonString(name) + [UInt8(ascii: ":")] + Self.jsonString(key)
        if !isEmpty { member.append(UInt8(ascii: ",")) }
        return Array(body[...brace]) + member + Array(body[(brace + 1)...])
    }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    private static func jsonString(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case 0..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }
}
