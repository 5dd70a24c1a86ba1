import Foundation

/// Replaces `local:<id>` references — the ids of things created offline —
/// with the server ids they received, before a dependent entry is sent.
///
/// Structural, never a raw substring replacement: in the endpoint, only a
/// whole path segment or a whole query value that is a reference; in a JSON
/// payload, only a whole string *value* that is a reference (object keys,
/// numbers, and text that merely contains a reference are left alone, and
/// every other byte of the payload is kept as it was). A payload that is not
/// JSON is never touched.
public enum LocalReferenceRemapper {
    /// The entries referenced in `endpoint` and `payload`.
    public static func references(endpoint: String, payload: [UInt8]) -> Set<OutboxEntryID> {
        guard mayContainReferences(endpoint: endpoint, payload: payload) else { return [] }
        var found = Set<OutboxEntryID>()
        _ = remapEndpoint(endpoint) { id in
            found.insert(id)
            return nil
        }
        _ = remapJSON(payload) { id in
            found.insert(id)
            return nil
        }
        return found
    }

    /// `endpoint` and `payload` with every reference `lookup` knows replaced.
    public static func remap(
        endpoint: String, payload: [UInt8], lookup: (OutboxEntryID) -> String?
    ) -> (endpoint: String, payload: [UInt8]) {
        guard mayContainReferences(endpoint: endpoint, payload: payload) else { return (endpoint, payload) }
        return (remapEndpoint(endpoint, lookup), remapJSON(payload, lookup) ?? payload)
    }

    /// A cheap byte scan that rules out references for almost every entry,
    /// so only those that may hold one pay for parsing: a reference is
    /// spelled `local:` in the endpoint, and in the payload either so or with
    /// JSON escapes (hence any backslash sends the payload to the parser).
    package static func mayContainReferences(endpoint: String, payload: [UInt8]) -> Bool {
        let prefix = Array(OutboxEntryID.localPrefix.utf8)
        return contains(Array(endpoint.utf8), prefix) || payload.contains(UInt8(ascii: "\\")) || contains(payload, prefix)
    }

    private static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, bytes.count >= needle.count else { return false }
        var index = 0
        while index <= bytes.count - needle.count {
            if bytes[index] == first && bytes[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }

    package static func reference(in text: some StringProtocol) -> OutboxEntryID? {
        guard text.hasPrefix(OutboxEntryID.localPrefix) else { return nil }
        return OutboxEntryID(text)
    }

    // MARK: Endpoint

    package static func remapEndpoint(_ endpoint: String, _ lookup: (OutboxEntryID) -> String?) -> String {
        let parts = endpoint.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let pathAllowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))
        let path = parts[0].split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard let id = reference(in: segment), let server = lookup(id) else { return String(segment) }
            return server.addingPercentEncoding(withAllowedCharacters: pathAllowed) ?? server
        }.joined(separator: "/")
        guard parts.count == 2 else { return path }
        let valueAllowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+"))
        let query = parts[1].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let field = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard field.count == 2, let id = reference(in: field[1]), let server = lookup(id) else { return String(pair) }
            return "\(field[0])=" + (server.addingPercentEncoding(withAllowedCharacters: valueAllowed) ?? server)
        }.joined(separator: "&")
        return path + "?" + query
    }

    // MARK: JSON

    /// The payload with references in string values replaced, or `nil` if it
    /// is not JSON (or nothing changed).
    package static func remapJSON(_ payload: [UInt8], _ lookup: (OutboxEntryID) -> String?) -> [UInt8]? {
        guard payload.contains(UInt8(ascii: "\"")),
            (try? JSONSerialization.jsonObject(with: Data(payload), options: [.fragmentsAllowed])) != nil
        else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(payload.count)
        var changed = false
        var index = 0
        while index < payload.count {
            guard payload[index] == UInt8(ascii: "\"") else {
                output.append(payload[index])
                index += 1
                continue
            }
            // A string token: find its closing quote, honouring escapes.
            var end = index + 1
            var escaped = false
            while end < payload.count {
                if escaped { escaped = false } else if payload[end] == UInt8(ascii: "\\") { escaped = true } else if payload[end] == UInt8(ascii: "\"") { break }
                end += 1
            }
            let token = Array(payload[index...min(end, payload.count - 1)])
            index = end + 1
            // An object key is followed by a colon: keys are never replaced.
            var next = index
            while next < payload.count, [0x20, 0x09, 0x0A, 0x0D].contains(payload[next]) { next += 1 }
            let isKey = next < payload.count && payload[next] == UInt8(ascii: ":")
            if !isKey, let text = decodeString(token), let id = reference(in: text), let server = lookup(id),
                let replacement = try? JSONSerialization.data(withJSONObject: server, options: [.fragmentsAllowed])
            {
                output.append(contentsOf: replacement)
                changed = true
            } else {
                output.append(contentsOf: token)
            }
        }
        return changed ? output : nil
    }

    private static func decodeString(_ token: [UInt8]) -> String? {
        if !token.contains(UInt8(ascii: "\\")), token.count >= 2 {
            return String(decoding: token[1..<(token.count - 1)], as: UTF8.self)
        }
        return (try? JSONSerialization.jsonObject(with: Data(token), options: [.fragmentsAllowed])) as? String
    }
}
