import Foundation
import Logging
import Outbox
import OutboxLog
import SystemPackage

/// The owner side of the spool mode: an "app" that holds its queue open,
/// watches its spools and drains to the server, until the parent says the
/// writers are done (a `DONE` file) and nothing is left anywhere: the queue
/// is empty and no spool remains. The parent kills it whenever it likes.
public enum SpoolOwner {
    public struct Job: Sendable {
        public var root: FilePath
        public var baseURL: URL
        public var encryptionKey: [UInt8]?

        public init(root: FilePath, baseURL: URL, encryptionKey: [UInt8]?) {
            self.root = root
            self.baseURL = baseURL
            self.encryptionKey = encryptionKey
        }
    }

    public static let partition = "torture"

    /// The file whose presence tells the owner that no writer will write again.
    public static func doneFile(_ root: FilePath) -> FilePath { root.appending("DONE") }

    /// Runs the job; returns the exit status (0 drained, 2 open failed, 3 a step failed).
    public static func run(_ job: Job) async -> Int32 {
        let quiet = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        var configuration = OutboxStoreConfiguration()
        configuration.log.logger = quiet
        if let key = job.encryptionKey { try? configuration.setEncryptionKey(key) }
        guard let store = await open(job.root, configuration: configuration) else { return LogWorker.Status.openFailed }
        let dispatcher = OutboxWorker.dispatcher(for: store, baseURL: job.baseURL, logger: quiet)
        WorkerLine.ready.send()
        await dispatcher.start()
        let watch = store.watchSpools(pollInterval: .milliseconds(10)) { _ in _ = await dispatcher.flush() }
        do {
            while true {
                await dispatcher.flush()
                let done = FileManager.default.fileExists(atPath: doneFile(job.root).string)
                if done {
                    // The writers are gone: whatever is spooled is ready.
                    let report = try await store.ingestSpools()
                    if !report.problems.isEmpty {
                        WorkerLine.fail(0, code: "spool", message: report.description).send()
                        return LogWorker.Status.stepFailed
                    }
                    if report.ingested + report.duplicates + report.quarantined == 0, try await store.summary().unsent == 0 {
                        break
                    }
                }
                let next = try await store.nextDueDate() ?? Date()
                let wait = min(max(0, next.timeIntervalSinceNow), 0.02)
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
            }
            watch.cancel()
            await dispatcher.stop()
            try await store.close()
        } catch {
            WorkerLine.fail(1, code: "outbox", message: "\(error)").send()
            return LogWorker.Status.stepFailed
        }
        WorkerLine.drained.send()
        return LogWorker.Status.done
    }

    /// Opens the queue, waiting while a writer holds it for a direct write
    /// (a moment each); `nil` after reporting any other failure.
    private static func open(_ root: FilePath, configuration: OutboxStoreConfiguration) async -> LogOutboxStore? {
        let deadline = Date().addingTimeInterval(30)
        while true {
            do {
                return try await LogOutboxStore.open(root: root, partition: partition, configuration: configuration)
            } catch where error.storage?.code == .locked && Date() < deadline {
                try? await Task.sleep(for: .milliseconds(2))
            } catch {
                WorkerLine.openFailed(code: WorkerLine.word(error.code), message: error.description).send()
                return nil
            }
        }
    }
}
