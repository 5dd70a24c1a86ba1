import CLITestSupport
import Foundation
import Outbox
import SystemPackage
import Testing

/// `outbox enqueue` as a real process, while this process holds the queue
/// (the app) and while nothing does: it says which path it took, and what
/// it spooled reaches the holder with its id and key.
@Suite("outbox enqueue, spooled or direct")
struct SpoolCommandTests {
    @Test("spooled while another process holds the queue, direct once it is closed; --json and text say which")
    func pathsAreReported() async throws {
        let root = TemporaryRoot()
        let configuration = quietConfiguration()
        let holder = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: configuration)
        let parent = OutboxEntry.ID()
        let spooled = try await OutboxTool.run([
            "enqueue", root.path.string, "--user", "alice", "--type", "like", "--endpoint", "POST /likes",
            "--payload", "{\"photo\":7}", "--id", "\(parent)", "--json",
        ])
        #expect(spooled.status == 0, "\(spooled.stderr)")
        let line = try #require(spooled.stdoutLines.first)
        let printed = try #require(OutboxTool.jsonObject(line))
        #expect(printed["path"] as? String == "spooled")
        #expect(printed["outcome"] as? String == "spooled")
        #expect(printed["id"] as? String == "\(parent)")
        #expect(try await holder.entry(parent) == nil)

        let report = try await holder.ingestSpools()
        #expect(report.ingested == 1 && report.spoolsDeleted == 1)
        let entry = try #require(try await holder.entry(parent))
        #expect(entry.idempotencyKey == printed["idempotencyKey"] as? String)
        #expect(entry.payload == Array("{\"photo\":7}".utf8))
        #expect(entry.headers["Content-Type"] == "application/json")
        try await holder.close()

        let direct = try await OutboxTool.run([
            "enqueue", root.path.string, "--user", "alice", "--payload", "plain text", "--depends-on", "\(parent)",
        ])
        #expect(direct.status == 0, "\(direct.stderr)")
        let words = try #require(direct.stdoutLines.first).split(separator: " ")
        #expect(words.count == 3 && words[2] == "direct")
        let reopened = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: configuration)
        let childID = try #require(OutboxEntry.ID(words[0]))
        let child = try #require(try await reopened.entry(childID))
        #expect(child.dependencies == [parent] && child.headers["Content-Type"] == nil)
        try await reopened.close()
    }

    @Test("a spool left by a writer while the holder ran is moved in by the next command that opens the queue")
    func leftBehindIsIngestedByTheNextOpener() async throws {
        let root = TemporaryRoot()
        let holder = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        let first = try await OutboxTool.run(["enqueue", root.path.string, "--user", "alice", "--size", "10", "--count", "3"])
        #expect(first.status == 0 && first.stdoutLines.allSatisfy { $0.hasSuffix(" spooled") }, "\(first.stdout)\(first.stderr)")
        try await holder.close()
        let list = try await OutboxTool.run(["list", root.path.string, "--user", "alice", "--json"])
        #expect(list.status == 0)
        let ids = list.stdoutLines.compactMap { OutboxTool.jsonObject($0)?["id"] as? String }
        #expect(ids == first.stdoutLines.map { String($0.split(separator: " ")[0]) })
    }

    @Test("through the CLI: a write spooled plain, then the queue sealed by the next enqueue with a key, is listed with the rest and left nowhere plain")
    func sealingTakesTheSpools() async throws {
        let root = TemporaryRoot()
        let secret = "spooled-\(UUID().uuidString)"
        let first = try await OutboxTool.run(["enqueue", root.path.string, "--user", "alice", "--payload", "first"])
        #expect(first.status == 0, "\(first.stderr)")
        let holder = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        let spooled = try await OutboxTool.run(["enqueue", root.path.string, "--user", "alice", "--payload", secret])
        #expect(spooled.status == 0 && spooled.stdout.contains("spooled"), "\(spooled.stdout)\(spooled.stderr)")
        try await holder.close()
        let keyFile = root.path.appending("key").string
        try Data((0..<32).map { UInt8($0) }).write(to: URL(fileURLWithPath: keyFile))
        let third = try await OutboxTool.run([
            "enqueue", root.path.string, "--user", "alice", "--payload", "third", "--key-file", keyFile,
        ])
        #expect(third.status == 0, "\(third.stderr)")
        let list = try await OutboxTool.run(["list", root.path.string, "--user", "alice", "--json", "--key-file", keyFile])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdoutLines.count == 3, "\(list.stdout)")
        let files = FileManager.default.enumerator(atPath: root.path.string)?.compactMap { $0 as? String } ?? []
        let plain = files.filter { name in
            (FileManager.default.contents(atPath: root.path.appending(name).string) ?? Data()).range(of: Data(secret.utf8)) != nil
        }
        #expect(plain.isEmpty, "readable on disk: \(plain)")
    }

    @Test("through the CLI: a directory dropped into a queue's payloads/ is reported on standard error; stats and enqueue still work")
    func strayPayloadDirectory() async throws {
        let root = TemporaryRoot()
        let first = try await OutboxTool.run(["enqueue", root.path.string, "--user", "alice", "--payload", "first"])
        #expect(first.status == 0, "\(first.stderr)")
        let partitions = root.path.appending("partitions").string
        let queue = try #require(try FileManager.default.contentsOfDirectory(atPath: partitions).first { $0.hasPrefix("outbox+") })
        try FileManager.default.createDirectory(
            atPath: "\(partitions)/\(queue)/payloads/stray", withIntermediateDirectories: true)
        let stats = try await OutboxTool.run(["stats", root.path.string, "--user", "alice", "--json"])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stderr.contains("payloads/stray") && stats.stderr.contains("moved aside"), "\(stats.stderr)")
        #expect(OutboxTool.jsonObject(try #require(stats.stdoutLines.first))?["setAside"] as? Int == 0)
        let again = try await OutboxTool.run(["enqueue", root.path.string, "--user", "alice", "--payload", "second"])
        #expect(again.status == 0, "\(again.stderr)")
    }
}
