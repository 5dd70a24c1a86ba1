import Foundation
import Logging
import Outbox
import OutboxHTTP
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// The child side of the outbox mode: an "app" that opens its outbox,
/// enqueues a few writes with ids minted in this life, then a known list of
/// writes (each with an id fixed by the seed, as an
/// app that retries its own enqueue after a restart would), reports every
/// acknowledged enqueue with its idempotency key, and drains the queue to
/// the server through the real dispatcher and HTTP handler until nothing is
/// left to send. The parent kills it whenever it likes.
public enum OutboxWorker {
    /// What to run; the parent passes these on the command line.
    public struct Job: Sendable {
        public var root: FilePath
        public var baseURL: URL
        public var seed: UInt64
        public var cycle: Int
        public var count: Int
        /// Seal the store under ``OutboxWorker/encryptionKey(seed:)``.
        public var encrypted = false

        public init(root: FilePath, baseURL: URL, seed: UInt64, cycle: Int, count: Int) {
            self.root = root
            self.baseURL = baseURL
            self.seed = seed
            self.cycle = cycle
            self.count = count
        }
    }

    public static let partition = "torture"

    /// The key an encrypted torture run seals its stores with: derived from
    /// the seed, so parent and child agree without passing it (a test key,
    /// not a secret).
    public static func encryptionKey(seed: UInt64) -> [UInt8] {
        var random = SplitMix64.derived(seed: seed, stream: 0x4B45_5900_0000_0000)
        return random.nextBytes(32)
    }

    /// The write the app records: a message, unique to its seed, cycle and index.
    struct Message: OutboxAction, Encodable {
        static let type = "torture_message"
        let conversation: String
        let text: String
        var method: String { "POST" }
        var endpoint: String { "/messages" }
        var scope: String? { conversation }
    }

    /// The text of entry `index`, by which the server's attempt log finds it.
    public static func tag(seed: UInt64, cycle: Int, index: Int) -> String { "torture-\(seed)-\(cycle)-\(index)" }

    /// The text of a write with a minted id, `name` from ``mintedName(life:index:)``.
    public static func tag(seed: UInt64, cycle: Int, name: String) -> String { "torture-\(seed)-\(cycle)-\(name)" }

    /// How many writes with minted ids each life enqueues.
    static let mintedPerLife = 3

    /// A write with a minted id: `m`, the life's random token, its index.
    /// (The fixed list's names are bare numbers.)
    static func mintedName(life: String, index: Int) -> String { "m\(life)-\(index)" }

    /// The prefix of every minted write's text in `cycle`.
    public static func mintedTagPrefix(seed: UInt64, cycle: Int) -> String { "torture-\(seed)-\(cycle)-m" }

    /// The store's checkpoint interval (the smallest allowed): a few records.
    static let checkpointInterval = 4096

    /// The entry id of `index`: the same in every life of the app.
    static func id(seed: UInt64, cycle: Int, index: Int) -> OutboxEntry.ID {
        var random = SplitMix64.derived(seed: seed, stream: 0x4F42_0000_0000_0000 | UInt64(cycle) << 20 | UInt64(index))
        return OutboxEntry.ID(random.nextUUID())
    }

    /// Runs the job; returns the exit status (0 drained, 2 open failed, 3 a step failed).
    public static func run(_ job: Job) async -> Int32 {
        let quiet = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        guard let store = await WorkerApp.open(root: job.root, partition: partition, configuration: configuration(job, logger: quiet))
        else { return LogWorker.Status.openFailed }
        WorkerLine.ready.send()
        if let failed = await explainAll(store) { return failed }
        if let failed = await enqueueMinted(job, into: store) { return failed }
        let dispatcher = dispatcher(for: store, baseURL: job.baseURL, logger: quiet)
        await dispatcher.start()
        if let failed = await enqueueList(job, through: dispatcher) { return failed }
        return await WorkerApp.drain(store, dispatcher, failingStep: job.count)
    }

    /// The store's configuration: checkpoints of the index and the schedule
    /// every few records, in small segments, so that a kill lands between
    /// checkpoints, and each relaunch loads the checkpoint and the records
    /// after it in the background while the app already enqueues.
    static func configuration(_ job: Job, logger: Logger) -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.log.logger = logger
        configuration.log.segmentSize = TortureLogConfiguration.segmentSize * 2
        configuration.log.indexCheckpointInterval = checkpointInterval
        if job.encrypted { try? configuration.setEncryptionKey(encryptionKey(seed: job.seed)) }
        return configuration
    }

    /// Straight after the open, before anything moves: every write the
    /// reopened queue holds is explained by a reason its status allows
    /// (``ExplanationCheck``). Returns the exit status if one was not.
    static func explainAll(_ store: LogOutboxStore) async -> Int32? {
        do {
            switch try await ExplanationCheck.explainAll(store, at: Date()) {
            case .success(let count):
                WorkerLine.explained(count).send()
                return nil
            case .failure(let problem):
                WorkerLine.fail(-1, code: "explain", message: problem.description).send()
            }
        } catch {
            WorkerLine.fail(-1, code: WorkerLine.word(error.code), message: "explain: \(error)").send()
        }
        return LogWorker.Status.stepFailed
    }

    /// Then a few writes with ids minted in this
    /// life: a store reopened from its checkpoint admits them while it is
    /// still loading (Docs/OUTBOX.md, "Reopening"). Returns the exit status
    /// if one failed.
    static func enqueueMinted(_ job: Job, into store: LogOutboxStore) async -> Int32? {
        let life = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        for index in 0..<mintedPerLife {
            let name = mintedName(life: life, index: index)
            let message = Message(conversation: "conversation-minted", text: tag(seed: job.seed, cycle: job.cycle, name: name))
            do throws(OutboxError) {
                let request: OutboxEnqueueRequest
                do { request = try OutboxEnqueueRequest(message) } catch {
                    throw OutboxError(.invalidArgument, "cannot encode \(name): \(error)")
                }
                switch try await store.enqueue(request) {
                case .enqueued(let entry), .coalesced(let entry, _):
                    WorkerLine.enqueued(id: name, key: entry.idempotencyKey).send()
                case .duplicate(let id, _):
                    WorkerLine.fail(index, code: "duplicate", message: "a minted id \(id) was a duplicate").send()
                    return LogWorker.Status.stepFailed
                }
            } catch {
                WorkerLine.fail(index, code: WorkerLine.word(error.code), message: error.description).send()
                return LogWorker.Status.stepFailed
            }
        }
        return nil
    }

    /// Every life enqueues the whole list again: what was recorded before
    /// comes back as a duplicate, what was not is recorded now. Returns the
    /// exit status if an enqueue failed.
    static func enqueueList(_ job: Job, through dispatcher: OutboxDispatcher) async -> Int32? {
        for index in 0..<job.count {
            let message = Message(
                conversation: "conversation-\(index % 6)", text: tag(seed: job.seed, cycle: job.cycle, index: index))
            let id = id(seed: job.seed, cycle: job.cycle, index: index)
            do {
                WorkerApp.sendEnqueued(try await dispatcher.enqueue(message, id: id), id: "\(index)")
            } catch {
                WorkerLine.fail(index, code: WorkerLine.word(error.code), message: error.description).send()
                return LogWorker.Status.stepFailed
            }
        }
        return nil
    }

    /// The app's dispatcher: HTTP to `baseURL`, four deliveries at once,
    /// quick retries, and a client timeout shorter than the server's held
    /// answers — some attempts time out after the server applied them, and
    /// are retried with the same key.
    static func dispatcher(for store: LogOutboxStore, baseURL: URL, logger: Logger) -> OutboxDispatcher {
        WorkerApp.dispatcher(
            for: store, baseURL: baseURL, logger: logger, concurrentDeliveries: 4,
            requestTimeout: .milliseconds(OutboxModeTorture.clientTimeoutMilliseconds), deliveryTimeout: .seconds(5))
    }
}
