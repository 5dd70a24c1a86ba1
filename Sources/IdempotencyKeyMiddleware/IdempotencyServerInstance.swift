import Foundation

/// The identity of this server process, as the owner of the keys it claims.
public enum IdempotencyServerInstance {
    /// A random id made once per process. Two middlewares in one process
    /// share it, so neither ever takes over a claim the other is running.
    public static let current: String = "server-" + UUID().uuidString.lowercased()
}
