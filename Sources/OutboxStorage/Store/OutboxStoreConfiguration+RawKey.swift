import Crypto
import Foundation
import OutboxModel

// The encryption key as raw bytes, so an app that keeps its key in the
// Keychain (or a secrets file) never has to import Crypto for `SymmetricKey`.

extension OutboxStoreConfiguration {
    /// Seals everything the store writes with AES-GCM under a key given as
    /// its raw bytes: 32 (AES-256, recommended), 24 or 16. The same as
    /// setting ``encryptionKey`` to `SymmetricKey(data: rawKey)`, without
    /// importing Crypto.
    ///
    /// Keep the key outside the outbox's directory (the Keychain on Apple
    /// platforms, a secret store on a server) and give the same key on every
    /// open: a different one fails the open with ``/OutboxModel/OutboxError/Code/wrongKey``.
    ///
    /// - Throws: ``/OutboxModel/OutboxError/Code/invalidArgument`` for any other length;
    ///   the configuration is then unchanged.
    public mutating func setEncryptionKey(_ rawKey: some ContiguousBytes) throws(OutboxError) {
        let count = rawKey.withUnsafeBytes(\.count)
        guard [16, 24, 32].contains(count) else {
            throw OutboxError(.invalidArgument, "an encryption key has 32 bytes (or 24, or 16), not \(count)")
        }
        encryptionKey = SymmetricKey(data: rawKey)
    }

    /// A new random 256-bit key for ``setEncryptionKey(_:)``, as 32 raw
    /// bytes from the system's secure random generator. Create it once per
    /// outbox root (one key seals every queue under a root, unless
    /// ``oneKeyPerRoot`` is off), and store it where the outbox's files are not.
    public static func newEncryptionKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }
}
