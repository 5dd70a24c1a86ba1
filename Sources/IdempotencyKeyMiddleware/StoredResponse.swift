import Foundation

/// A response stored under an idempotency key, to replay to repeats.
///
/// Encoded (for stores that serialize it) as JSON with the body in base64;
/// a body encoded as an array of byte values is read too.
public struct StoredResponse: Sendable, Hashable, Codable {
    public var status: Int
    /// Headers worth replaying (content type, location, …), lower-case names.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    private enum CodingKeys: String, CodingKey { case status, headers, body }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decode(Int.self, forKey: .status)
        headers = try container.decode([String: String].self, forKey: .headers)
        if let data = try? container.decode(Data.self, forKey: .body) {
            body = Array(data)
        } else {
            body = try container.decode([UInt8].self, forKey: .body)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encode(headers, forKey: .headers)
        try container.encode(Data(body), forKey: .body)
    }
}
