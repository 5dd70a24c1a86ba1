import Foundation
import IdempotencyKeyMiddleware
import Logging
import Outbox
import OutboxHTTP
import OutboxLog
import OutboxLogTesting
import OutboxReferenceServer
import SystemPackage

/// The `outboxfault` mode: power loss and failed syncs while a dispatcher is
/// draining to the reference server.
///
/// In this process, on the simulated disk: an app opens its outbox, two
/// producers enqueue messages while its `OutboxDispatcher` drains them
/// through `HTTPOutboxHandler` to the reference Idempotency-Key server (with
/// faults), and the disk fails under it — a sync fails with EIO, once or
/// from then on, the machine loses power at a random change to the disk,
/// or both (``OutboxFaultPlan``). Each life but the last ends in a power
/// loss; the next reopens the store and enqueues again what the app still
/// owes (same entry ids). A write whose enqueue failed while the machine
/// ran is, by a coin, given up or enqueued again later. The last life has
/// no faults and drains everything. Then the server's records must show:
/// - every write whose enqueue was acknowledged applied exactly once;
/// - nothing of a write the app was told failed (and gave up, or had not
///   enqueued again yet) ever received, let alone applied — nothing is
///   sent before its enqueue is durable;
/// - every attempt at a write carrying one key, the one derived from the
///   partition and the entry id, and the one the app was given.
enum OutboxFaultTorture {
    static let root: FilePath = "/torture/outbox"
    static let partition = "torture"
    /// The client gives up on an answer after this long; the server holds
    /// some answers longer (after applying the write).
    static let clientTimeoutMilliseconds = 250

    static func run(options: TortureOptions, budget: Budget, report: inout TortureReport) async {
        var faults = ServerFaults.mixed(rate: 0.2, seed: options.seed ^ 0x4F46)
        faults.retryAfterSeconds = 0
        faults.timeoutDelay = .milliseconds(clientTimeoutMilliseconds + 100)
        faults.slowDelay = .milliseconds(10)
        faults.slowApplyDelay = .milliseconds(clientTimeoutMilliseconds + 100)
        let server: ReferenceServer
        do {
            server = try await ReferenceServer.start(faults: faults, keyStore: InMemoryIdempotencyKeyStore(), recordAttempts: true)
        } catch {
            report.notes.append("outboxfault: skipped, the reference server did not start: \(error)")
            return
        }
        for cycle in budget.cycles {
            let before = report[.outboxfault].violations
            let disk = await self.cycle(cycle, server: server, options: options, report: &report)
            if report[.outboxfault].violations > before {
                let kept = await DiskImage.save(disk, to: options.directory.appending("outboxfault-cycle-\(cycle)"))
                report.notes.append("outboxfault: the simulated disk of cycle \(cycle) is kept in \(kept)")
                break
            }
            if cycle % 5 == 0 {
                let counts = report[.outboxfault]
                options.progress(
                    "outboxfault: cycle \(cycle), \(counts.acknowledged) enqueues acknowledged, \(counts.recovered) writes applied, "
                        + "\(counts.violations) violations")
            }
        }
        await server.stop()
    }

    /// The text of write `index`, by which the server's attempt log finds it.
    static func tag(seed: UInt64, cycle: Int, index: Int) -> String { "outboxfault-\(seed)-\(cycle)-\(index)" }

    /// Write `index`'s entry id: the same in every life of the app.
    static func id(seed: UInt64, cycle: Int, index: Int) -> OutboxEntry.ID {
        var random = SplitMix64.derived(seed: seed, stream: 0x4F46_0000_0000_0000 | UInt64(cycle) << 20 | UInt64(index))
        return OutboxEntry.ID(random.nextUUID())
    }

    /// One app through its lives; returns its simulated disk.
    static func cycle(_ cycle: Int, server: ReferenceServer, options: TortureOptions, report: inout TortureReport) async
        -> SimulatedFileSystem
    {
        var random = SplitMix64.derived(seed: options.seed, stream: 0x4F46_4C54_0000_0000 | UInt64(cycle))
        let disk = SimulatedFileSystem(directories: ["/torture"])
        let count = 10 + random.next(below: 21)
        let lives = 2 + random.next(below: 3)
        var app = OutboxFaultApp(
            writes: (0..<count).map { index in
                OutboxFaultApp.Write(
                    id: id(seed: options.seed, cycle: cycle, index: index), tag: tag(seed: options.seed, cycle: cycle, index: index))
            })
        if options.encrypted { app.encryptionKey = OutboxWorker.encryptionKey(seed: options.seed) }
        let durabilities = Durabilities.draw(&random)
        report.detail(.outboxfault, "cycles with attempt marks \(durabilities.attempt)")
        report.detail(.outboxfault, "cycles with success marks \(durabilities.success)")
        let faultsBefore = server.ledger.faults.values.reduce(0, +)
        for life in 0..<lives {
            let plan = OutboxFaultPlan.draw(life: life, lives: lives, &random)
            let context = "\(durabilities), life \(life + 1) of \(lives) (\(plan))"
            if let problem = await app.live(
                plan, durabilities: durabilities, on: disk, server: server, random: &random, report: &report)
            {
                report.violation(.outboxfault, seed: options.seed, cycle: cycle, "\(context): \(problem)", reproduce: reproduce(options, cycle))
                return disk
            }
        }
        report.count(.outboxfault) { $0.faults += server.ledger.faults.values.reduce(0, +) - faultsBefore }
        if let problem = app.check(against: server, report: &report) {
            report.violation(.outboxfault, seed: options.seed, cycle: cycle, problem, reproduce: reproduce(options, cycle))
            return disk
        }
        report.count(.outboxfault) { $0.cycles += 1 }
        return disk
    }

    /// The store's durabilities a cycle runs with: enqueues and outcomes are
    /// always `durable` (what the app is told depends on it); attempt and
    /// success marks take any level the configuration allows — with a
    /// `buffered` attempt mark, a claim waits for nothing of its own.
    struct Durabilities: Sendable, CustomStringConvertible {
        var attempt: Durability
        var success: Durability

        static func draw(_ random: inout SplitMix64) -> Durabilities {
            let levels = Durability.allCases
            return Durabilities(attempt: levels[random.next(below: levels.count)], success: levels[random.next(below: levels.count)])
        }

        var description: String { "attempt marks \(attempt), success marks \(success)" }
    }

    /// Replays the cycle's plans and writes (not the interleaving of the
    /// dispatcher's threads with the producers').
    static func reproduce(_ options: TortureOptions, _ cycle: Int) -> String {
        "outbox torture --mode outboxfault --seed \(options.seed) --first-cycle \(cycle) --cycles 1"
    }

    /// The app's store and dispatcher on `fileSystem`.
    static func configurations(
        fileSystem: any FileSystem, baseURL: URL, durabilities: Durabilities
    ) -> (OutboxStoreConfiguration, OutboxDispatcherConfiguration, HTTPOutboxHandler) {
        let quiet = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        var store = OutboxStoreConfiguration()
        store.log = TortureLogConfiguration.make(fileSystem: fileSystem)
        store.attemptDurability = durabilities.attempt
        store.successDurability = durabilities.success
        var dispatching = OutboxDispatcherConfiguration()
        dispatching.maximumConcurrentDeliveries = 4
        dispatching.backoff = OutboxBackoff(base: .milliseconds(2), cap: .milliseconds(40))
        dispatching.deliveryTimeout = .seconds(5)
        dispatching.maximumAge = nil
        dispatching.logger = quiet
        var http = HTTPOutboxHandler.Configuration(baseURL: baseURL)
        http.requestTimeout = .milliseconds(clientTimeoutMilliseconds)
        return (store, dispatching, HTTPOutboxHandler(configuration: http))
    }
}
