import CLITestSupport
import Foundation
import Testing

/// `outbox enqueue` (and the other outbox commands) with a root given as a
/// bare relative directory: it is created where the command runs.
@Suite("outbox enqueue with a relative directory")
struct EnqueueCommandTests {
    @Test("`outbox enqueue myqueue …` creates ./myqueue and enqueues; list and stats find it there")
    func bareRelativeDirectory() async throws {
        let root = TemporaryRoot()
        let enqueue = try await OutboxTool.run(["enqueue", "myqueue", "--count", "2", "--size", "16"], currentDirectory: root.path.string)
        #expect(enqueue.status == 0, "stderr: \(enqueue.stderr)")
        #expect(enqueue.stdout.split(separator: "\n").count == 2)
        let queues = try FileManager.default.contentsOfDirectory(atPath: root.path.string + "/myqueue/partitions")
        #expect(queues.count == 1 && queues[0].hasPrefix("outbox+"), "\(queues)")

        let list = try await OutboxTool.run(["list", "myqueue", "--json"], currentDirectory: root.path.string)
        #expect(list.status == 0, "stderr: \(list.stderr)")
        let stats = try await OutboxTool.run(["stats", "myqueue"], currentDirectory: root.path.string)
        #expect(stats.status == 0, "stderr: \(stats.stderr)")
    }
}
