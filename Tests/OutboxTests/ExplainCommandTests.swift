import CLITestSupport
import Foundation
import Testing

@testable import Outbox

/// `outbox explain` and the `why` of `outbox list`, run as real processes
/// against a queue this test set up through the library and closed.
@Suite("outbox explain")
struct ExplainCommandTests {
    @Test("a write stuck behind a quarantined parent: one command names the parent and says to retry it")
    func stuckBehindAQuarantinedParent() async throws {
        let root = TemporaryRoot()
        let store = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        let parent = try await store.add(request())
        let child = try await store.add(request(dependencies: [parent]))
        let later = try await store.add(request(scope: "chat"))
        let behind = try await store.add(request(scope: "chat"))
        _ = try await store.quarantine(parent, OutboxFailure(.permanent, httpStatus: 422))
        try await store.close()

        let text = try await OutboxTool.run(["explain", root.path.string, child.description, "--user", "alice"])
        #expect(text.status == 0, "stderr: \(text.stderr)")
        #expect(text.stdoutLines.count == 1)
        #expect(text.stdout.contains("quarantined") && text.stdout.contains("retry \(parent)"), "\(text.stdout)")

        let json = try await OutboxTool.run(["explain", root.path.string, child.localReference, "--user", "alice", "--json"])
        #expect(json.status == 0, "stderr: \(json.stderr)")
        let object = try #require(json.stdoutLines.first.flatMap(OutboxTool.jsonObject))
        #expect(object["id"] as? String == child.description)
        #expect(object["status"] as? String == "quarantined")
        #expect(object["reason"] as? String == "quarantined")
        #expect(object["remedy"] as? String == "retryParent")
        #expect(object["waitsFor"] as? String == parent.description)
        #expect((object["lastFailure"] as? [String: Any])?["cause"] as? String == "dependency")
        #expect((object["why"] as? String)?.isEmpty == false)

        let scoped = try await OutboxTool.run(["explain", root.path.string, behind.description, "--user", "alice", "--json"])
        let scopedObject = try #require(scoped.stdoutLines.first.flatMap(OutboxTool.jsonObject))
        #expect(scopedObject["reason"] as? String == "behindInScope")
        #expect(scopedObject["waitsFor"] as? String == later.description)

        // list: every line ends with its why; --json has reason and why.
        let list = try await OutboxTool.run(["list", root.path.string, "--user", "alice", "--json"])
        #expect(list.status == 0, "stderr: \(list.stderr)")
        let reasons = Dictionary(
            uniqueKeysWithValues: list.stdoutLines.compactMap(OutboxTool.jsonObject).map { ($0["id"] as? String ?? "", $0["reason"] as? String ?? "") })
        #expect(reasons == [
            parent.description: "quarantined", child.description: "quarantined", later.description: "due",
            behind.description: "behindInScope",
        ])
        let lines = try await OutboxTool.run(["list", root.path.string, "--user", "alice"])
        #expect(lines.stdoutLines.count == 4 && lines.stdoutLines.allSatisfy { $0.contains("  why: ") }, "\(lines.stdout)")
    }

    @Test("an id the queue does not know is explained as unknown; a malformed id is a usage error that opens nothing")
    func unknownAndMalformedIDs() async throws {
        let root = TemporaryRoot()
        let store = try await LogOutboxStore.open(root: root.path, partition: "alice", configuration: quietConfiguration())
        try await store.close()
        let unknown = OutboxEntry.ID()
        let run = try await OutboxTool.run(["explain", root.path.string, unknown.description, "--user", "alice", "--json"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdoutLines.first.flatMap(OutboxTool.jsonObject)?["reason"] as? String == "unknown")
        let otherUser = try await OutboxTool.run(["explain", root.path.string, unknown.description, "--user", "bob"])
        #expect(otherUser.status == 0 && otherUser.stdout.contains("not in this queue"), "\(otherUser.stdout)\(otherUser.stderr)")
        let malformed = try await OutboxTool.run(["explain", root.path.string, "not-an-id"])
        #expect(malformed.status == 64)
        #expect(malformed.stderr.contains("not an entry id"), "\(malformed.stderr)")
    }
}
