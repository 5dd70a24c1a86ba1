import Foundation

/// Runs blocking work (file copies, directory removal) on a thread of its
/// own, so it never occupies one of the cooperative pool's few threads.
enum Blocking {
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let thread = Thread {
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
            thread.name = "outbox-torture-blocking"
            thread.start()
        }
    }

    /// Removes `path` (if present) and creates it again, empty.
    static func freshDirectory(_ path: String) async throws {
        try await run {
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
    }

    static func remove(_ path: String) async {
        _ = try? await run { try? FileManager.default.removeItem(atPath: path) }
    }
}
