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
}
