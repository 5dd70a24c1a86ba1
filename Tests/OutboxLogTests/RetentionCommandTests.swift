import CLITestSupport
import Foundation
import OutboxLog
import SystemPackage
import Testing

/// `outbox log append --expires-at-ms`, `dump` showing expiries, and
/// `outbox log remove-expired`, run as real child processes.
@Suite("Command-line tool: retention", .serialized)
struct RetentionCommandTests {
    func outbox(_ arguments: String...) async throws -> OutboxTool.Run { try await OutboxTool.run(arguments) }

    @Test("records appended with an expiry show it in dump, and remove-expired removes their segments once it passed")
    func appendDumpRemove() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path.string
        for (prefix, expiry) in [("old-", "10000"), ("new-", nil)] {
            var arguments = ["log", "append", path, "--create", "--count", "40", "--size", "200", "--durability", "durable",
                             "--segment-size", "4096", "--key-prefix", prefix]
            if let expiry { arguments += ["--expires-at-ms", expiry] }
            let append = try await OutboxTool.run(arguments)
            #expect(append.status == 0, "\(append.stderr)")
        }
        let dump = try await outbox("log", "dump", "--json", path)
        let entries = dump.stdoutLines.compactMap(OutboxTool.jsonObject)
        #expect(entries.count == 80)
        #expect(entries.first?["expiresAt"] as? Int == 10_000, "\(entries.first ?? [:])")
        #expect(entries.last?["expiresAt"] == nil)
        #expect(try await outbox("log", "dump", path).stdoutLines.first?.contains("expires 10000") == true)

        let early = try await outbox("log", "remove-expired", path, "--now-ms", "9999", "--json")
        #expect(early.status == 0, "\(early.stderr)")
        #expect(OutboxTool.jsonObject(early.stdoutLines.first ?? "")?["segmentsRemoved"] as? Int == 0)

        let removal = try await outbox("log", "remove-expired", path, "--now-ms", "10000", "--json")
        #expect(removal.status == 0, "\(removal.stderr)")
        let report = try #require(OutboxTool.jsonObject(removal.stdoutLines.first ?? ""), "\(removal.stdout)")
        let removed = try #require(report["keysRemoved"] as? Int)
        #expect((report["segmentsRemoved"] as? Int ?? 0) >= 1 && removed > 0 && removed < 40, "\(report)")

        let after = try await outbox("log", "dump", "--json", path)
        #expect(after.stdoutLines.count == 80 - removed)
        let verify = try await outbox("log", "verify", path)
        #expect(verify.status == 0, "\(verify.stdout)")
    }

    @Test("an expiry the format cannot hold fails with one line and writes nothing")
    func unstorableExpiry() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path.string
        let append = try await outbox(
            "log", "append", path, "--create", "--count", "3", "--size", "10", "--durability", "durable",
            "--expires-at-ms", String(Int64.max))
        #expect(append.status != 0)
        #expect(append.stdoutLines.isEmpty)
        #expect(append.stderr.contains("expiry"), "\(append.stderr)")
        let dump = try await outbox("log", "dump", "--json", path)
        #expect(dump.status == 0 && dump.stdoutLines.isEmpty, "\(dump.stderr)")
    }
}
