import Foundation
import Logging
import Outbox
import OutboxHTTP
import OutboxLocking
import OutboxLogTesting
import OutboxReferenceServer
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The child side of the payload mode: an app that enqueues an album and
/// photo uploads whose bodies go to payload files (ids and bytes fixed by
/// the seed), reports each acknowledged enqueue, and drains them to the
/// reference server through the HTTP handler, streaming each body from its
/// file. It may kill itself (SIGKILL) at the n-th occurrence of one step of
/// writing or deleting a payload file, so every step is hit, not just the
/// ones a timer happens to land on.
public enum PayloadWorker {
    public struct Job: Sendable {
        public var root: FilePath
        public var baseURL: URL
        public var seed: UInt64
        public var cycle: Int
        /// Photos (the album is one more entry, first).
        public var count: Int
        public var encrypted = false
        /// Kill this process at the `killOccurrence`-th time this step is reached.
        public var killAt: String?
        public var killOccurrence = 1

        public init(root: FilePath, baseURL: URL, seed: UInt64, cycle: Int, count: Int) {
            self.root = root
            self.baseURL = baseURL
            self.seed = seed
            self.cycle = cycle
            self.count = count
        }

        var arguments: [String] {
            [
                "torture-worker", "payload", "--root", root.string, "--base-url", baseURL.absoluteString, "--seed", "\(seed)",
                "--cycle", "\(cycle)", "--count", "\(count)",
            ] + (encrypted ? ["--encrypted"] : [])
                + (killAt.map { ["--kill-at", $0, "--kill-occurrence", "\(killOccurrence)"] } ?? [])
        }
    }

    static let partition = "payload-torture"
    /// Bodies above this go to files (small, so that every photo does).
    static let threshold = 4096

    /// The steps a job may kill itself at.
    public static var killSteps: [String] { PayloadFileStep.allCases.map(\.rawValue) }

    /// The id of entry `index` (0 is the album), the same in every life.
    static func id(seed: UInt64, cycle: Int, index: Int) -> OutboxEntry.ID {
        var random = SplitMix64.derived(seed: seed, stream: 0x5041_594C_0000_0000 | UInt64(cycle) << 20 | UInt64(index))
        return OutboxEntry.ID(random.nextUUID())
    }

    /// The bytes of photo `index` (from 1): a text marker (for the
    /// plaintext scan of encrypted runs), then seeded bytes; 5 KiB to about
    /// 700 KiB, one in eight about 2.5 MiB (dozens of sealed chunks).
    static func photo(seed: UInt64, cycle: Int, index: Int) -> [UInt8] {
        var random = SplitMix64.derived(seed: seed, stream: 0x5048_4F54_0000_0000 | UInt64(cycle) << 20 | UInt64(index))
        let size = random.next(below: 8) == 0 ? 2_500_000 + random.next(below: 100_000) : 5_000 + random.next(below: 700_000)
        let marker = Array(marker(seed: seed, cycle: cycle, index: index).utf8)
        return marker + random.nextBytes(size - marker.count)
    }

    static func marker(seed: UInt64, cycle: Int, index: Int) -> String { "payload-torture-\(seed)-\(cycle)-\(index) " }

    struct Album: OutboxAction, Encodable {
        static let type = "torture_album"
        let title: String
        var method: String { "POST" }
        var endpoint: String { "/albums" }
    }

    struct Upload: OutboxAction {
        static let type = "torture_upload"
        let album: OutboxEntry.ID
        let bytes: [UInt8]
        var method: String { "POST" }
        var endpoint: String { "/albums/\(album.localReference)/uploads" }
        var dependencies: [OutboxEntry.ID] { [album] }
        var headers: [String: String] { ["Content-Digest": ReferenceServer.contentDigest(of: bytes)] }
        func payload() throws -> [UInt8] { bytes }
    }

    /// The store configuration every life (and the parent's check) uses.
    static func configuration(_ job: Job) -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.log.logger = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        configuration.largePayloadThreshold = threshold
        if job.encrypted { try? configuration.setEncryptionKey(OutboxWorker.encryptionKey(seed: job.seed)) }
        return configuration
    }

    /// Runs the job; returns the exit status (0 drained, 2 open failed, 3 a step failed).
    public static func run(_ job: Job) async -> Int32 {
        var configuration = configuration(job)
        if let step = job.killAt.flatMap(PayloadFileStep.init(rawValue:)) {
            let reached = KillCounter(target: job.killOccurrence)
            configuration.payloadFileObserver = { seen in
                if seen == step, reached.reach() { kill(getpid(), SIGKILL) }
            }
        }
        guard let store = await WorkerApp.open(root: job.root, partition: partition, configuration: configuration)
        else { return LogWorker.Status.openFailed }
        let dispatcher = dispatcher(for: store, baseURL: job.baseURL, logger: configuration.log.logger)
        WorkerLine.ready.send()
        await dispatcher.start()
        if let failed = await enqueueAlbum(job, through: dispatcher) { return failed }
        return await WorkerApp.drain(store, dispatcher, failingStep: job.count + 1)
    }

    /// The app's dispatcher: HTTP to `baseURL`, three deliveries at once, quick retries.
    static func dispatcher(for store: LogOutboxStore, baseURL: URL, logger: Logger) -> OutboxDispatcher {
        WorkerApp.dispatcher(
            for: store, baseURL: baseURL, logger: logger, concurrentDeliveries: 3, requestTimeout: .seconds(20),
            deliveryTimeout: .seconds(30))
    }

    /// Enqueues the album, then its photos; returns the exit status if an enqueue failed.
    static func enqueueAlbum(_ job: Job, through dispatcher: OutboxDispatcher) async -> Int32? {
        let album = id(seed: job.seed, cycle: job.cycle, index: 0)
        for index in 0...job.count {
            do {
                let result: OutboxEnqueueResult
                if index == 0 {
                    result = try await dispatcher.enqueue(Album(title: "torture \(job.cycle)"), id: album)
                } else {
                    let upload = Upload(album: album, bytes: photo(seed: job.seed, cycle: job.cycle, index: index))
                    result = try await dispatcher.enqueue(upload, id: id(seed: job.seed, cycle: job.cycle, index: index))
                }
                WorkerApp.sendEnqueued(result, id: "\(index)")
            } catch {
                WorkerLine.fail(index, code: WorkerLine.word(error.code), message: error.description).send()
                return LogWorker.Status.stepFailed
            }
        }
        return nil
    }
}

/// Counts how often a step is reached; says when the target occurrence is.
private final class KillCounter: Sendable {
    private let count = Locked(0)
    let target: Int
    init(target: Int) { self.target = target }
    func reach() -> Bool {
        count.withLock { count in
            count += 1
            return count == target
        }
    }
}
