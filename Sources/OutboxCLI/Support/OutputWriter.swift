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

    /// When standard output is a file, syncs it (`fsync`): what was
    /// printed is then as durable as a commit made after it. A pipe or a
    /// terminal has nothing to sync; what reads it decides.
    static func syncIfFile() async throws(CommandFailure) {
        let failure: CommandFailure? = await withCheckedContinuation { continuation in
            writing.async {
                var status = stat()
                guard fstat(STDOUT_FILENO, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                    return continuation.resume(returning: nil)
                }
                // Never retried: a failed sync may have dropped the pages it could not write.
                guard fsync(STDOUT_FILENO) == 0 else {
                    return continuation.resume(
                        returning: CommandFailure(
                            "syncing standard output failed: \(String(cString: strerror(errno)))", exitCode: CommandFailure.operationFailed))
                }
                continuation.resume(returning: nil)
            }
        }
        if let failure { throw failure }
    }
}
