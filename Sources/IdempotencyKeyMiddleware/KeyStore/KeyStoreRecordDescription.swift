import Foundation
import OutboxLog
import SystemPackage

/// What a key store's records decode to, as JSON objects named after
/// Docs/STORE-FORMAT.md's fields ("The key store's records"): the expected
/// results of the key store's test vectors (Tests/StoreVectors), made by
/// `outbox log make-store-vectors` and checked by the tests with the
/// store's own decoder (``KeyStoreRecord``). Byte strings are lowercase
/// hex, bodies base64, times milliseconds since 1970; records in sequence
/// order.
package enum KeyStoreRecordDescription {
    /// The key store in `directory` (a copy: opening its log read-only
    /// still creates `LOCK`): `{"keys": […]}`, read with its `keys.secret`.
    package static func directory(
        _ directory: FilePath, configuration: OutboxLog.Configuration = OutboxLog.Configuration()
    ) async throws -> [String: Any] {
        let secret = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.appending(KeyStoreSecret.fileName).string)))
        var configuration = configuration
        configuration.readOnly = true
        configuration.createIfMissing = false
        let log = try await OutboxLog.open(at: directory, configuration: configuration)
        var entries: [LogEntry] = []
        do {
            for try await record in log.allEntries() { entries.append(record) }
        } catch {
            try? await log.close()
            throw error
        }
        try await log.close()
        return ["keys": try records(entries, secret: secret)]
    }

    /// Every live record of the store's log, decoded, each checked to sit
    /// under the digest of its own key (with `secret`, `keys.secret`).
    package static func records(_ records: [LogEntry], secret: [UInt8]) throws -> [[String: Any]] {
        let digester = KeyDigester(secret: secret)
        return try records.sorted { $0.sequence < $1.sequence }.map { record in
            guard let decoded = KeyStoreRecord.decode(record.value), let expiry = record.expiry else {
                throw IdempotencyKeyStoreError(.damaged, "record \(record.sequence) does not decode, or has no expiry")
            }
            let digest = digester.digest(decoded.key)
            let expectedKey = decoded.isCompleted ? digest.settledKey : digest.unsettledKey
            guard record.key == expectedKey else {
                throw IdempotencyKeyStoreError(.damaged, "record \(record.sequence) is not under its key's digest")
            }
            var description: [String: Any] = [
                "logKey": hex(record.key.bytes), "expiresAt": expiry, "key": decoded.key,
                "fingerprint": hex(decoded.fingerprint), "since": NSNull(), "owner": NSNull(), "reason": NSNull(),
                "response": NSNull(),
            ]
            switch decoded {
            case .completed(_, _, let response):
                description["kind"] = 1
                description["response"] = [
                    "status": response.status,
                    "headers": response.headers.sorted { $0.key < $1.key }.map { [$0.key, $0.value] },
                    "body": Data(response.body).base64EncodedString(),
                ] as [String: Any]
            case .claim(_, _, let since, let owner):
                description["kind"] = 2
                description["since"] = KeyStoreTime.milliseconds(since)
                description["owner"] = owner
            case .unknown(_, _, let since, let reason):
                description["kind"] = 3
                description["since"] = KeyStoreTime.milliseconds(since)
                description["reason"] = Int(KeyStoreRecord.reasonCode(reason))
            }
            return description
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { byte in String(format: "%02x", byte) }.joined()
    }
}
