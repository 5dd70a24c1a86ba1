import Foundation
import OutboxLog
import SystemPackage
import Testing

/// The top-level outbox commands (`enqueue`, `list`, `stats`, `purge`), run
/// as real child processes of the built `outbox` executable, with the
/// process helpers of ``CommandLineToolTests``.
///
/// This target does not depend on the `Outbox` library, so where a test
/// holds a user's queue open it opens that queue's log directory,
/// `<root>/partitions/outbox+<keyed hash>/`, with `OutboxLog.open`: the same lock a
/// `LogOutboxStore` holds.
@Suite("Outbox commands")
struct OutboxCommandTests {
    private let tool = CommandLineToolTests()

    // MARK: enqueue, list, stats

    @Test("enqueue prints N distinct '<id> <key>' lines; list --json returns those entries pending; stats counts them")
    func enqueueListStats() async throws {
        let directory = TemporaryDirectory()
        let root = directory.appending("root").string
        let count = 6

        let enqueue = try await outbox(
            "enqueue", root, "--count", "\(count)", "--size", "300", "--endpoint", "PUT /albums/7/photos",
            "--user", "alice", "--scope", "album:7", "--type", "photo")
        #expect(enqueue.status == 0)
        #expect(enqueue.stderr.isEmpty)
        let printed = try enqueue.stdoutLines.map(parseEnqueued)
        #expect(printed.count == count)
        #expect(Set(printed.map(\.id)).count == count)
        #expect(Set(printed.map(\.key)).count == count)
        #expect(Set(printed.map(\.id)).isDisjoint(with: printed.map(\.key)))

        let list = try await outbox("list", root, "--user", "alice", "--json")
        #expect(list.status == 0)
        #expect(list.stderr.isEmpty)
        let entries = try list.stdoutLines.map(jsonObject)
        try #require(entries.count == count)
        #expect(entries.map { $0["id"] as? String } == printed.map(\.id))
        #expect(entries.map { $0["idempotencyKey"] as? String } == printed.map(\.key))
        for entry in entries {
            #expect(entry["status"] as? String == "pending")
            #expect(entry["method"] as? String == "PUT")
            #expect(entry["endpoint"] as? String == "/albums/7/photos")
            #expect(entry["scope"] as? String == "album:7")
            #expect(entry["type"] as? String == "photo")
            #expect((entry["attempts"] as? NSNumber)?.intValue == 0)
            #expect((entry["payloadBytes"] as? NSNumber)?.intValue == 300)
            #expect(((entry["maxAttempts"] as? NSNumber)?.intValue ?? 0) >= 1)
            #expect((entry["priority"] as? NSNumber)?.intValue == 0)
            #expect((entry["dependencies"] as? [Any])?.isEmpty == true)
            #expect(entry["lastFailure"] is NSNull)
            #expect(entry["serverID"] is NSNull)
            #expect(isoDate(entry["nextAttemptAt"]) != nil)
            #expect(isoDate(entry["createdAt"]) != nil)
        }
        let sequences = entries.compactMap { ($0["sequence"] as? NSNumber)?.uint64Value }
        #expect(sequences.count == count)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 })

        let text = try await outbox("list", root, "--user", "alice")
        #expect(text.status == 0)
        #expect(text.stdoutLines.count == count)
        #expect(zip(text.stdoutLines, printed).allSatisfy { $0.contains($1.id) && $0.contains("pending") })

        // --status: repeatable, comma-separated, any case; only the statuses' names.
        let pending = try await outbox("list", root, "--user", "alice", "--json", "--status", "waitingToRetry", "--status", "pending")
        #expect(pending.status == 0)
        #expect(pending.stdoutLines.count == count)
        let none = try await outbox("list", root, "--user", "alice", "--json", "--status", "quarantined,conflict,inFlight")
        #expect(none.status == 0)
        #expect(none.stdout.isEmpty)
        let anyCase = try await outbox("list", root, "--user", "alice", "--json", "--status", "PENDING")
        #expect(anyCase.status == 0)
        #expect(anyCase.stdoutLines.count == count)
        for other in ["failed", "dead"] {
            let refused = try await outbox("list", root, "--user", "alice", "--status", other)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("unknown status \"\(other)\""))
        }
        let wrong = try await outbox("list", root, "--user", "alice", "--status", "gone")
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("waitingToRetry"))
        #expect(none.status == 0)
        #expect(none.stdout.isEmpty)

        let stats = try await outbox("stats", root, "--user", "alice", "--json")
        #expect(stats.status == 0)
        #expect(stats.stderr.isEmpty)
        try #require(stats.stdoutLines.count == 1)
        let summary = try jsonObject(stats.stdoutLines[0])
        let counts = try #require(summary["counts"] as? [String: Any])
        let bytes = try #require(summary["bytes"] as? [String: Any])
        #expect((counts["pending"] as? NSNumber)?.intValue == count)
        for status in ["inFlight", "waitingToRetry", "quarantined", "conflict", "succeeded"] {
            #expect((counts[status] as? NSNumber)?.intValue == 0, "\(status)")
        }
        #expect(((bytes["pending"] as? NSNumber)?.intValue ?? 0) >= count * 300)
        #expect((summary["unsent"] as? NSNumber)?.intValue == count)
        #expect((summary["needsAttention"] as? NSNumber)?.intValue == 0)
        #expect((summary["total"] as? NSNumber)?.intValue == count)
        #expect(summary["partitions"] as? [String] == ["alice"])
        #expect(summary["user"] as? String == "alice")
    }

    @Test("enqueue continues an existing queue; the defaults are user 'default', POST /posts, type post, no scope")
    func enqueueDefaultsAndAppend() async throws {
        let directory = TemporaryDirectory()
        let root = directory.path.string
        let first = try await outbox("enqueue", root, "--count", "2", "--size", "0")
        let second = try await outbox("enqueue", root, "--count", "3", "--size", "5")
        #expect(first.status == 0 && second.status == 0)
        let printed = try (first.stdoutLines + second.stdoutLines).map(parseEnqueued)
        #expect(printed.count == 5)

        let entries = try await outbox("list", root, "--json").stdoutLines.map(jsonObject)
        #expect(entries.map { $0["id"] as? String } == printed.map(\.id))
        #expect(entries.allSatisfy {
            $0["method"] as? String == "POST" && $0["endpoint"] as? String == "/posts"
                && $0["type"] as? String == "post" && $0["scope"] is NSNull && $0["user"] as? String == "default"
        })
        #expect(entries.map { ($0["payloadBytes"] as? NSNumber)?.intValue } == [0, 0, 5, 5, 5])
        let stats = try jsonObject(try #require(try await outbox("stats", root, "--json").stdoutLines.first))
        #expect((stats["total"] as? NSNumber)?.intValue == 5)
        #expect(stats["partitions"] as? [String] == ["default"])

        let text = try await outbox("stats", root)
        #expect(text.status == 0)
        #expect(text.stdoutLines.contains { $0.hasPrefix("total") && $0.contains("5 entries") })
    }

    // MARK: users

    @Test("--user separates queues: another user lists nothing, and stats lists every partition")
    func usersAreSeparate() async throws {
        let directory = TemporaryDirectory()
        let root = directory.path.string
        let alice = try await outbox("enqueue", root, "--count", "3", "--size", "64", "--user", "alice")
        let bob = try await outbox("enqueue", root, "--count", "2", "--size", "64", "--user", "bob")
        #expect(alice.status == 0 && bob.status == 0)

        let bobEntries = try await outbox("list", root, "--user", "bob", "--json").stdoutLines.map(jsonObject)
        #expect(bobEntries.map { $0["id"] as? String } == (try bob.stdoutLines.map(parseEnqueued).map(\.id)))

        let carol = try await outbox("list", root, "--user", "carol", "--json")
        #expect(carol.status == 0)
        #expect(carol.stdout.isEmpty)
        #expect(carol.stderr.isEmpty)

        let stats = try await outbox("stats", root, "--user", "bob", "--json")
        #expect(stats.status == 0)
        let summary = try jsonObject(try #require(stats.stdoutLines.first))
        #expect((summary["total"] as? NSNumber)?.intValue == 2)
        #expect(summary["partitions"] as? [String] == ["alice", "bob"])

        // Reading another user's (absent) queue created nothing.
        let carolStats = try jsonObject(try #require(try await outbox("stats", root, "--user", "carol", "--json").stdoutLines.first))
        #expect((carolStats["total"] as? NSNumber)?.intValue == 0)
        #expect(carolStats["partitions"] as? [String] == ["alice", "bob"])
    }

    // MARK: purge

    @Test("purge deletes one user's queue and leaves the others")
    func purgeOneUser() async throws {
        let directory = TemporaryDirectory()
        let root = directory.path.string
        #expect(try await outbox("enqueue", root, "--count", "2", "--size", "32", "--user", "alice").status == 0)
        let bob = try await outbox("enqueue", root, "--count", "3", "--size", "32", "--user", "bob")
        #expect(bob.status == 0)

        let purge = try await outbox("purge", root, "--user", "alice")
        #expect(purge.status == 0)
        #expect(purge.stderr.isEmpty)

        let list = try await outbox("list", root, "--user", "alice", "--json")
        #expect(list.status == 0)
        #expect(list.stdout.isEmpty)
        let bobEntries = try await outbox("list", root, "--user", "bob", "--json").stdoutLines.map(jsonObject)
        #expect(bobEntries.map { $0["id"] as? String } == (try bob.stdoutLines.map(parseEnqueued).map(\.id)))
        let stats = try jsonObject(try #require(try await outbox("stats", root, "--user", "bob", "--json").stdoutLines.first))
        #expect(stats["partitions"] as? [String] == ["bob"])

        // Purging a user without a queue deletes nothing and succeeds.
        let again = try await outbox("purge", root, "--user", "alice")
        #expect(again.status == 0)
        #expect(again.stderr.isEmpty)
    }

    @Test("a queue held open by this process: purge, list and stats fail with one 'locked' line, enqueue spools; purge works once it is closed")
    func lockedQueue() async throws {
        let directory = TemporaryDirectory()
        let root = directory.path
        #expect(try await outbox("enqueue", root.string, "--count", "2", "--size", "16", "--user", "alice").status == 0)

        // Alice's queue: the one directory under partitions/ (named by a keyed hash of "alice").
        let queues = try FileManager.default.contentsOfDirectory(atPath: root.appending("partitions").string)
        let queue = try #require(queues.first { $0.hasPrefix("outbox+") }, "\(queues)")
        let held = try await OutboxLog.open(
            at: root.appending("partitions").appending(queue), configuration: testConfiguration())
        let attempts: [[String]] = [
            ["purge", root.string, "--user", "alice"],
            ["list", root.string, "--user", "alice", "--json"],
            ["stats", root.string, "--user", "alice", "--json"],
        ]
        // Enqueue does not need the queue: it writes a spool beside it.
        let spooled = try await outbox("enqueue", root.string, "--count", "1", "--size", "8", "--user", "alice")
        #expect(spooled.status == 0 && spooled.stderr.isEmpty, "\(spooled.stderr)")
        #expect(spooled.stdoutLines.count == 1 && spooled.stdout.hasSuffix(" spooled\n"), "\(spooled.stdout)")
        for arguments in attempts {
            let result = try await outbox(arguments)
            #expect(result.status == 2, "\(arguments[0])")
            #expect(result.stdout.isEmpty, "\(arguments[0])")
            #expect(result.stderrLines.count == 1, "\(arguments[0])")
            #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains("locked"), "\(arguments[0]): \(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appending("partitions").string) == queues)
        try await held.close()

        let list = try await outbox("list", root.string, "--user", "alice", "--json")
        #expect(list.stdoutLines.count == 3)  // the open moved the spooled entry in
        let purge = try await outbox("purge", root.string, "--user", "alice")
        #expect(purge.status == 0)
        #expect(try await outbox("list", root.string, "--user", "alice").stdout.isEmpty)
    }

    // MARK: errors

    @Test("list, stats and purge of a missing directory exit 2 with one line and create nothing")
    func missingDirectory() async throws {
        let directory = TemporaryDirectory()
        let missing = directory.appending("missing").string
        for arguments in [["list", missing], ["list", missing, "--json"], ["stats", missing, "--json"],
                          ["purge", missing, "--user", "alice"]] {
            let result = try await outbox(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderrLines.count == 1, "\(arguments)")
            #expect(result.stderr.hasPrefix("error: not found: "), "\(arguments)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test(
        "bad arguments exit 64 with one line on stderr and create nothing",
        arguments: [
            ["enqueue", "--count", "0", "--size", "8"],
            ["enqueue", "--count", "1", "--size", "-1"],
            ["enqueue", "--count", "1", "--size", "\(16 << 20)"],
            ["enqueue", "--count", "1"],
            ["enqueue", "--size", "8", "--payload", "both"],
            ["enqueue", "--payload", "x", "--id", "not-a-uuid"],
            ["enqueue", "--payload", "x", "--count", "2", "--id", "6F9619FF-8B86-D011-B42D-00C04FC964FF"],
            ["enqueue", "--payload", "x", "--depends-on", "nope"],
            ["enqueue", "--count", "1", "--size", "8", "--endpoint", "POST"],
            ["enqueue", "--count", "1", "--size", "8", "--endpoint", "/posts"],
            ["enqueue", "--count", "1", "--size", "8", "--endpoint", "POST posts"],
            ["enqueue", "--count", "1", "--size", "8", "--endpoint", "POST /a b"],
            ["enqueue", "--count", "1", "--size", "8", "--user", ""],
            ["enqueue", "--count", "1", "--size", "8", "--bogus"],
            ["list", "--status", "sent"],
            ["list", "--status", "pending,"],
            ["stats", "--user", ""],
            ["purge"],
        ])
    func badArguments(_ arguments: [String]) async throws {
        let directory = TemporaryDirectory()
        let root = directory.appending("root")
        let result = try await outbox([arguments[0], root.string] + arguments.dropFirst())
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.hasPrefix("error: "))
        #expect(!FileManager.default.fileExists(atPath: root.string))
    }
}

// MARK: - Helpers

extension OutboxCommandTests {
    func outbox(_ arguments: String...) async throws -> CommandLineToolTests.ToolRun { try await tool.outbox(arguments) }
    func outbox(_ arguments: [String]) async throws -> CommandLineToolTests.ToolRun { try await tool.outbox(arguments) }
    func jsonObject(_ line: String) throws -> [String: Any] { try tool.jsonObject(line) }

    /// One line of `enqueue`: `<id> <idempotency key>`, both UUIDs.
    func parseEnqueued(_ line: String) throws -> (id: String, key: String) {
        let parts = line.split(separator: " ").map(String.init)
        try #require(parts.count == 3 && ["direct", "spooled"].contains(parts[2]), "not '<id> <key> <path>': \(line)")
        try #require(UUID(uuidString: parts[0]) != nil && UUID(uuidString: parts[1]) != nil, "not two UUIDs: \(line)")
        return (parts[0], parts[1])
    }

    /// An ISO 8601 date string, parsed.
    func isoDate(_ value: Any?) -> Date? {
        guard let text = value as? String else { return nil }
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
    }
}
