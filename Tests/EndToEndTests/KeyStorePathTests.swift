import Foundation
import IdempotencyKeyMiddleware
import Testing

/// `LogIdempotencyKeyStore.open(at:)` by `String` and file `URL`, as a server
/// names its key directory on a first launch: missing parents are created
/// (0700), and a path that cannot name a directory is refused with the
/// store's own error type.
@Suite("LogIdempotencyKeyStore paths", .serialized, .timeLimit(.minutes(5)))
struct KeyStorePathTests {
    let t0 = Date(timeIntervalSince1970: 1_900_000_000)

    func temporaryRoot() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("idem-path-\(UUID().uuidString)").path
    }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("a first launch creates the missing parents (0700 each); the same directory reopens by file URL")
    func createsParents() async throws {
        let root = temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/var/lib/api/idempotency"
        let claim = IdempotencyClaim(owner: "test", staleAfter: .seconds(60), expiresAt: t0.addingTimeInterval(600))
        let response = StoredResponse(status: 201, headers: [:], body: Array(#"{"id":"m-1"}"#.utf8))

        let keys = try await LogIdempotencyKeyStore.open(at: directory, now: t0)
        #expect(try await keys.begin(key: "k-1", fingerprint: [1], now: t0, claim: claim) == .proceed)
        try await keys.complete(key: "k-1", response: response, now: t0, expiresAt: t0.addingTimeInterval(600))
        try await keys.close()
        for path in [root, root + "/var", root + "/var/lib", root + "/var/lib/api", directory] {
            #expect(try mode(path) == 0o700, "\(path)")
        }

        let reopened = try await LogIdempotencyKeyStore.open(at: URL(fileURLWithPath: directory), now: t0)
        #expect(try await reopened.begin(key: "k-1", fingerprint: [1], now: t0, claim: claim) == .completed(response))
        try await reopened.close()
    }

    @Test("an empty path or a URL that is not a file URL is an invalid argument; a file in the way is named")
    func refusedPaths() async throws {
        await #expect { _ = try await LogIdempotencyKeyStore.open(at: "", now: t0) } throws: { error in
            (error as? IdempotencyKeyStoreError)?.code == .invalidArgument
        }
        await #expect {
            _ = try await LogIdempotencyKeyStore.open(at: URL(string: "https://example.com/keys")!, now: t0)
        } throws: { error in
            (error as? IdempotencyKeyStoreError)?.code == .invalidArgument
        }

        let root = temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: root + "/blocker", contents: Data("x".utf8)))
        await #expect { _ = try await LogIdempotencyKeyStore.open(at: root + "/blocker/keys", now: t0) } throws: { error in
            guard let error = error as? IdempotencyKeyStoreError else { return false }
            return error.code == .io && error.message.contains(root + "/blocker") && error.message.contains("a file is in the way")
        }
    }
}
