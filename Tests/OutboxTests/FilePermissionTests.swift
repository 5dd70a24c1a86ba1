import Crypto
import Foundation
import Outbox
import SystemPackage
import Testing

/// After real use (enqueue, deliver, fail, compact by
/// reopening, purge of another user) every file under the root is 0600 and
/// every directory 0700 — with encryption on and off.
@Suite("File permissions")
struct FilePermissionTests {
    @Test("every file 0600 and every directory 0700 after use", arguments: [false, true])
    func ownerOnly(encrypted: Bool) async throws {
        let root = TemporaryRoot()
        // The root is created by the open, inside the test's temporary directory.
        let outbox = root.path.appending("outbox")
        var configuration = quietConfiguration()
        if encrypted { configuration.encryptionKey = SymmetricKey(size: .bits256) }
        for user in ["alice", "bob"] {
            let store = try await LogOutboxStore.open(root: outbox, partition: user, configuration: configuration)
            let first = try await store.add(request(payload: "one"))
            let second = try await store.add(request(payload: "two"))
            try await store.deliver(first, serverID: "s1")
            _ = try await store.beginAttempt(second, at: Date(), lease: .seconds(30))
            _ = try await store.recordFailure(second, OutboxFailure(.transient, message: "timeout"), retryAt: Date())
            try await store.close()
        }
        try await LogOutboxStore.purge(root: outbox, partition: "bob", configuration: configuration)

        var checked = 0
        let enumerator = try #require(FileManager.default.enumerator(atPath: outbox.string))
        var paths = [outbox.string]
        while let relative = enumerator.nextObject() as? String { paths.append(outbox.string + "/" + relative) }
        for path in paths {
            var info = stat()
            #expect(lstat(path, &info) == 0)
            let permissions = info.st_mode & 0o777
            if (info.st_mode & S_IFMT) == S_IFDIR {
                #expect(permissions == 0o700, "\(path) is a directory with mode \(String(permissions, radix: 8))")
            } else {
                #expect(permissions == 0o600, "\(path) is a file with mode \(String(permissions, radix: 8))")
            }
            checked += 1
        }
        #expect(checked >= 5)
    }
}
