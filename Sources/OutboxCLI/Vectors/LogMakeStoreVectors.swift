import ArgumentParser
import Foundation
import IdempotencyKeyMiddleware
import Outbox
import OutboxLog
import SystemPackage

/// `outbox log make-store-vectors DIR`: writes the stores' test vectors
/// (Tests/StoreVectors, Docs/STORE-FORMAT.md).
struct LogMakeStoreVectors: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "make-store-vectors",
        abstract: "Write the outbox store's, the key store's and the durable queue's test vectors (Tests/StoreVectors).",
        discussion: """
            For each case, DIR/<case>/files/ holds the store directory's files exactly as on disk and \
            DIR/<case>/expected.json what the stores' own decoders read in them. Existing case folders \
            are replaced. Clock, ids, salts and the key store's secret are fixed, so running it again \
            gives the same bytes.
            """
    )

    @Argument(help: "The folder to write the vectors into (Tests/StoreVectors in the repository).")
    var directory: String

    /// Set in the child this command runs itself as: the checkpoint lists
    /// names and completions in the order of Swift dictionaries, which is
    /// the same from run to run only with deterministic hashing.
    static let hashingVariable = "SWIFT_DETERMINISTIC_HASHING"

    func run() async throws {
        guard ProcessInfo.processInfo.environment[Self.hashingVariable] != nil else {
            let status = try await Self.runSelfDeterministic(CommandLine.arguments.dropFirst())
            if status != 0 { throw ExitCode(status) }
            return
        }
        let queue = try await StoreVectorQueue.files()
        var records = queue
        records["SCHEDULE"] = nil
        try await write("queue-records", summary: Self.queueSummary, files: records)
        try await write(
            "queue-checkpoint", summary: "the same queue with the SCHEDULE checkpoint its clean close wrote", files: queue)
        try await write("key-store", summary: Self.keysSummary, files: try await StoreVectorKeys.files())
        try await write("durable-queue", summary: Self.durableQueueSummary, files: try await StoreVectorDurableQueue.files())
    }

    static let queueSummary = """
        a plain queue: entries pending, in flight, waiting to retry, quarantined, in conflict and succeeded \
        (with their completions), dependencies, the app's idempotency keys, and a last failure of every cause code
        """
    static let durableQueueSummary = """
        a durable queue: elements of text, none, binary bytes, an atomic batch and JSON; a consumer that \
        committed, one that committed nothing, and one removed (tombstone)
        """
    static let keysSummary = """
        a key store: two completed keys, a claim, an unknown outcome, and a released key (tombstone)
        """

    func write(_ name: String, summary: String, files: VectorFiles) async throws {
        let folder = directory + "/" + name
        try? FileManager.default.removeItem(atPath: folder)
        try VectorLogs.store(files, in: folder + "/files")
        var expected = try await StoreVectorReading.expected(files)
        expected["summary"] = summary
        let json = try JSONSerialization.data(withJSONObject: expected, options: [.prettyPrinted, .sortedKeys])
        try (json + Data("\n".utf8)).write(to: URL(fileURLWithPath: folder + "/expected.json"))
        StandardStreams.writeLine("\(name): \(files.count) files")
    }

    /// Runs this executable again with `arguments` and deterministic
    /// hashing; its exit status. Its output is ours.
    static func runSelfDeterministic(_ arguments: ArraySlice<String>) async throws -> Int32 {
        let process = Process()
        process.executableURL = Bundle.main.executableURL
        process.arguments = Array(arguments)
        var environment = ProcessInfo.processInfo.environment
        environment[hashingVariable] = "1"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
    }
}
