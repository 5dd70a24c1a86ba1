/// What the durable key store holds in memory, behind one lock: the keys
/// not settled yet, whole (few: every request with one is decided from
/// here), and the keys whose completed record a request is reading.
struct KeyStoreMemory: Sendable {
    /// In progress or outcome unknown, by client key.
    var unsettled: [String: KeyRecord] = [:]
    /// Keys being read, each with the reading request as an in-progress
    /// claim: a concurrent request with the key is answered 409 meanwhile.
    /// Kept apart from ``unsettled`` so that a settlement never takes one
    /// for a claim.
    var reading: [String: KeyRecord] = [:]

    /// Ends `reader`'s hold on `key` (and no other request's).
    mutating func stopReading(_ key: String, _ reader: KeyRecord) {
        if reading[key] == reader { reading[key] = nil }
    }
}
