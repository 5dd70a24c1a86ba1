import Foundation
import IdempotencyKeyMiddleware
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// The key journal target's seeds: the segments and index files a
/// `LogIdempotencyKeyStore` writes for completed, released, unknown and
/// unsettled keys.
enum JournalTarget {
    static func seeds() async throws -> [[UInt8]] {
        let disk = SimulatedFileSystem()
        var configuration = LogIdempotencyKeyStore.Configuration()
        configuration.fileSystem = disk
        configuration.segmentSize = 4096
        let directory: FilePath = "/seed/keys"
        let now = Date(timeIntervalSince1970: 1_767_225_600.25)
        let store = try await LogIdempotencyKeyStore.open(at: directory, configuration: configuration, now: now)
        let claim = IdempotencyClaim(owner: "server-a", staleAfter: .seconds(30), expiresAt: now.addingTimeInterval(86_400))
        for index in 0..<60 {
            let key = "order-\(index)"
            let fingerprint = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
            _ = try await store.begin(key: key, fingerprint: fingerprint, now: now, claim: claim)
            switch index % 4 {
            case 0, 1:
                let response = StoredResponse(
                    status: 201, headers: ["Content-Type": "application/json", "Location": "/orders/\(index)"],
                    body: Array(#"{"id":\#(index),"total":"12.50"}"#.utf8))
                try await store.complete(key: key, response: response, now: now, expiresAt: now.addingTimeInterval(86_400.5))
            case 2: try await store.abandon(key: key, owner: "server-a")
            default: if index % 8 == 3 { try await store.settleUnknown(key: key, owner: "server-a", now: now, expiresAt: now.addingTimeInterval(3600)) }
            }
        }
        try await store.close()
        var segments: [[UInt8]] = []
        var indexes: [[UInt8]] = []
        for path in disk.allFiles().sorted(by: { $0.string < $1.string }) {
            guard let bytes = disk.contents(of: path) else { continue }
            if path.extension == "journal" { segments.append(bytes) }
            if path.extension == "index" { indexes.append(bytes) }
        }
        guard !segments.isEmpty, !indexes.isEmpty else { throw FuzzViolation("harness: the store wrote no sealed segment") }
        return JournalFuzzing.seeds(segments: segments, indexes: indexes)
    }
}
