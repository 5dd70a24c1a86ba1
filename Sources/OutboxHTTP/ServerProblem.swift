import Foundation

/// What an Idempotency-Key server says in an error body: an RFC 9457
/// problem document (`type`, `title`, `code`), as the IETF draft, our
/// middleware and Stripe-style APIs send it. Only the markers below are
/// read; any other body says nothing.
struct ServerProblem {
    enum Claim {
        /// The key was used before for a different request (the draft's 422).
        case keyReused
        /// The key was processed, but its response was not kept (410).
        case responseNotStored
    }

    private let words: String

    init(body: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.prefix(64 << 10))) as? [String: Any] else {
            words = ""
            return
        }
        var fields: [String] = []
        for name in ["type", "title", "code"] { if let value = object[name] as? String { fields.append(value) } }
        if let error = object["error"] as? [String: Any] {  // {"error": {"type", "code"}} (Stripe)
            for name in ["type", "code"] { if let value = error[name] as? String { fields.append(value) } }
        }
        words = fields.joined(separator: " ").lowercased()
    }

    func says(_ claim: Claim) -> Bool {
        let markers: [String]
        switch claim {
        case .keyReused:
            markers = ["key-reused", "key_reused", "key reused", "key is already used", "already used", "idempotency_key_reused"]
        case .responseNotStored:
            markers = ["response-not-stored", "response not stored", "already processed", "already-processed"]
        }
        return markers.contains { words.contains($0) }
    }
}
