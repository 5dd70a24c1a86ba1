import Foundation

/// Writes to standard output on a dispatch queue of its own: a write to a
/// pipe whose reader has stalled blocks until it reads, and that wait must
/// not hold a thread of Swift's cooperative pool (the queue's own work
/// runs there).
enum OutputWriter {
    private static let writing = DispatchQueue(label: "outbox.output")

    /// Writes `bytes` whole, or throws what the write met (a closed pipe).
    static func write(_ bytes: [UInt8]) async throws(CommandFailure) {
        let failure: CommandFailure? = await withCheckedContinuation { continuation in
            writing.async {
                do {
                    try FileHandle.standardOutput.write(contentsOf: bytes)
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(
                        returning: CommandFailure("writing to standard output failed: \(error)", exitCode: CommandFailure.operationFailed))
                }
            }
        }
        if let failure { throw failure }
    }
}
