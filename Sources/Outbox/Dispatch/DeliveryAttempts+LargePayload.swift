import OutboxStorage
import OutboxModel
extension DeliveryAttempts {
    /// Before a body kept in a file is handed to its handler, the whole
    /// file is read and checked against what its entry recorded: a damaged
    /// or missing file quarantines the entry (cause `payloadFileDamaged`;
    /// the message names the file, the offset and what is wrong) instead
    /// of sending another body. A file that cannot be read (an I/O error)
    /// is a transient failure, counted like any other.
    func checkLargePayload(_ entry: OutboxEntry) async -> Resolution? {
        guard let large = entry.largePayload else { return nil }
        do {
            try await large.verify()
            return nil
        } catch {
            if case .unreadable? = error.payloadFile?.reason {
                return .unresolved(.transient(reason: "\(error)", httpStatus: nil, retryAfter: nil), cause: .transient)
            }
            return .unresolved(.permanent(reason: "\(error)", httpStatus: nil), cause: .payloadFileDamaged)
        }
    }
}
