import Foundation
import Logging
import Outbox
import OutboxHTTP
import OutboxLog
import OutboxLogTesting
import OutboxReferenceServer
import OutboxTorture
import IdempotencyKeyMiddleware
import OutboxLocking
import SystemPackage

/// "A day of a real app", played against the reference server: writes made
/// offline (albums, photos that refer to them by `local:` id, likes toggled
/// until they coalesce, messages — a few of which the server rejects), then
/// connectivity comes back, the app is killed mid-drain, restarts, and the
/// queue drains under injected faults. The ledger proves every write
/// arrived exactly once.
struct DemoScenario {
    struct Options {
        var count: Int
        var faultRate: Double
        var seed: UInt64
        var directory: FilePath
        /// The demo gives up (with a ledger of what remained) after this long.
        var deadline: Duration
        /// Debugging: the server answers every write 503, so the queue can
        /// never drain (tests the deadline).
        var rejectEverything = false
        /// Debugging: the app's disk fails right after the restart, so the
        /// store fails under the dispatcher (tests the error path).
        var failDiskAfterRestart = false
        /// Serve from this many `outbox serve --postgres` processes on this
        /// database (round-robin), instead of one server in this process.
        var postgres: (url: String, servers: Int)?
        /// How long the server takes to answer each request (a network's
        /// round trip).
        var latency: Duration = .zero
        var progress: (String) -> Void
    }

    /// Deliveries the app's dispatcher runs at once.
    static let concurrency = 8

    /// What the app recorded, to check against the server's ledger.
    struct Recorded {
        var keys: [OutboxEntry.ID: String] = [:]  // id → idempotency key
        var albums: [OutboxEntry.ID] = []
        var photos: [OutboxEntry.ID] = []
        var messages: [OutboxEntry.ID] = []
        var rejected: [OutboxEntry.ID] = []
        var likes: [String: Bool] = [:]  // post → last value
        var likeEntries: [String: OutboxEntry.ID] = [:]
        var toggles = 0
        var coalesced = 0

        /// Writes the server should apply.
        var deliverable: [OutboxEntry.ID] { albums + photos + messages + Array(likeEntries.values) }
    }

    /// One life of the app's process: its store, dispatcher and event follower.
    struct AppLife {
        let store: LogOutboxStore
        let dispatcher: OutboxDispatcher
        let events: Task<Void, Never>

        func stopDispatcher() async {
            await dispatcher.stop()
            events.cancel()
        }
    }

    let options: Options

    /// Plays the day. Returns the ledger whether the queue drained or not:
    /// a store or dispatcher error, or the deadline passing, ends the run
    /// early with ``DemoReport/failure`` set. Throws only if the server or
    /// the demo's directory cannot be set up.
    func run() async throws -> DemoReport {
        let started = ContinuousClock.now
        let deadline = started + options.deadline
        var random = SplitMix64(seed: options.seed)
        let server = try await startServers()

        let failures = DemoFailures()
        let tally = Tally()
        var recorded = Recorded()
        var beforeRestart = 0
        var restarted = false
        var life: AppLife?
        var failure: DemoFailure?
        do {
            // The app's process, first life: its disk can "die" with it.
            let disk = CrashingFileSystem(base: PosixFileSystem(), crashAt: nil)
            let connectivity = ManualConnectivityMonitor(online: false)
            let first = try await openLife(fileSystem: disk, connectivity: connectivity, server: server, tally: tally, failures: failures)
            life = first

            // Offline: the user keeps using the app.
            try await recordOfflineDay(on: first.dispatcher, into: &recorded, random: &random)
            let expected = recorded.deliverable.count
            options.progress(
                "offline: recorded \(expected + recorded.rejected.count + recorded.coalesced) writes — "
                    + "\(recorded.albums.count) albums, \(recorded.photos.count) photos of them (by local: id), "
                    + "\(recorded.messages.count + recorded.rejected.count) messages, \(recorded.toggles) like toggles "
                    + "coalesced to \(recorded.likeEntries.count)")

            // Back online; the app is killed about a third of the way through:
            // its disk dies at that delivery, whatever is in flight.
            let killAt = max(1, expected / 3)
            tally.onDelivered(killAt) {
                failures.arm(false)  // the disk dies on purpose: its errors are the point
                disk.crash()
            }
            connectivity.setOnline(true)
            options.progress("online: draining")
            try await tally.wait(
                until: { $0.delivered >= killAt }, progress: options.progress, total: expected,
                deadline: deadline, failures: failures)
            await first.stopDispatcher()
            try? await first.store.close()
            life = nil
            beforeRestart = tally.snapshot.delivered
            options.progress("app killed after \(beforeRestart) deliveries; restarting")

            // Second life: same directory, new process state.
            failures.arm(true)
            let secondDisk = CrashingFileSystem(base: PosixFileSystem(), crashAt: nil)
            let second = try await openLife(
                fileSystem: secondDisk, connectivity: ManualConnectivityMonitor(online: true), server: server,
                tally: tally, failures: failures)
            life = second
            restarted = true
            if options.failDiskAfterRestart { secondDisk.crash() }
            try await tally.wait(
                until: { _ in false }, progress: options.progress, total: expected, deadline: deadline, failures: failures,
                done: { try await second.store.summary().unsent == 0 })
        } catch let error as DemoFailure {
            failure = error
        } catch {
            failure = DemoFailure("the outbox failed: \(error)")
        }

        let report = await finish(
            recorded: recorded, tally: tally, life: life, failure: failure, started: started,
            deliveredBeforeRestart: restarted ? beforeRestart : nil, server: server)
        await server.stop()
        return report
    }

    /// The day's report: what remains in the queue, what the servers'
    /// ledger says they applied, and why the run ended early, if it did.
    private func finish(
        recorded: Recorded, tally: Tally, life: AppLife?, failure: DemoFailure?, started: ContinuousClock.Instant,
        deliveredBeforeRestart: Int?, server: DemoServers
    ) async -> DemoReport {
        var failure = failure
        let left = await whatRemains(in: life, failure: &failure)
        let ledger: ReferenceLedger
        do {
            ledger = try await server.ledger()
        } catch {
            ledger = ReferenceLedger()
            if failure == nil { failure = DemoFailure("cannot read the servers' ledger: \(error)") }
        }
        let unsent = left.unsent ?? recorded.deliverable.filter { recorded.keys[$0].map { ledger.applied[$0] == nil } ?? true }.count
        if failure?.isDeadline == true {
            let seconds = Double(options.deadline.components.seconds) + Double(options.deadline.components.attoseconds) / 1e18
            let text = seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
            failure?.message = "the deadline of \(text) s passed with \(unsent) write(s) unsent"
        }
        return DemoReport(
            recorded: recorded, tally: tally.snapshot, ledger: ledger, remaining: unsent,
            quarantined: left.quarantined, elapsed: started.duration(to: .now), deliveredBeforeRestart: deliveredBeforeRestart,
            failure: failure?.message, unexplained: left.unexplained, concurrency: Self.concurrency, latency: options.latency)
    }

    /// Starts the reference server (or servers, on PostgreSQL) with the
    /// options' faults and latency, and says where.
    private func startServers() async throws -> DemoServers {
        var faults = ServerFaults.mixed(rate: options.faultRate, seed: options.seed)
        faults.halfOpenHold = .seconds(2)  // past the demo client's 1 s timeout
        if options.rejectEverything {
            faults = ServerFaults()
            faults.serverError = 1
        }
        let server: DemoServers
        if let postgres = options.postgres {
            server = try await .processes(
                count: postgres.servers, postgres: postgres.url, faultRate: options.faultRate, seed: options.seed,
                latency: options.latency)
        } else {
            server = try await .inProcess(faults: faults, directory: options.directory, latency: options.latency)
        }
        var faultText = options.rejectEverything ? "every write answered 503" : "faults: \(Int(options.faultRate * 100))% of writes"
        if options.latency > .zero { faultText += "; each answer takes \(DemoReport.milliseconds(options.latency)) ms" }
        if options.postgres != nil {
            options.progress(
                "\(server.baseURLs.count) reference server process(es) on one PostgreSQL database, round-robin: "
                    + server.baseURLs.map(\.absoluteString).joined(separator: ", ") + " (\(faultText))")
        } else {
            options.progress("reference server on \(server.baseURLs[0]) (\(faultText))")
        }
        return server
    }

    /// What the day left in the queue.
    struct Left {
        var unsent: Int?
        /// Each quarantined entry with why it waits (`outbox explain`'s sentence).
        var quarantined: [(entry: OutboxEntry, why: String)] = []
        /// A write left that the store does not explain by a reason its status allows.
        var unexplained: String?
    }

    /// What remained, from the app's own store while it is still open: the
    /// unsent count, and the quarantined entries each with its explanation,
    /// after checking that every write left is explained by its state
    /// (nothing without a store, or if it cannot be read — then `failure`
    /// says so, unless the run already failed).
    private func whatRemains(in life: AppLife?, failure: inout DemoFailure?) async -> Left {
        guard let life else { return Left() }
        await life.stopDispatcher()
        do {
            var left = Left(unsent: try await life.store.summary().unsent)
            for entry in try await life.store.entries(matching: OutboxFilter(statuses: [.quarantined])) {
                left.quarantined.append((entry, try await life.store.explain(entry.id, at: Date()).description))
            }
            if case .failure(let problem) = try await ExplanationCheck.explainAll(life.store, at: Date()) {
                left.unexplained = problem.description
            }
            try await life.store.close()
            return left
        } catch {
            try? await life.store.close()
            if failure == nil { failure = DemoFailure("cannot read the outbox: \(error)") }
            return Left()
        }
    }

    /// Opens the app's store and starts a dispatcher on it.
    private func openLife(
        fileSystem: any FileSystem, connectivity: ManualConnectivityMonitor, server: DemoServers, tally: Tally, failures: DemoFailures
    ) async throws -> AppLife {
        var configuration = OutboxStoreConfiguration()
        configuration.log = quietLog()
        configuration.log.fileSystem = fileSystem
        let store = try await LogOutboxStore.open(root: options.directory.appending("app"), partition: "demo-user", configuration: configuration)
        let dispatcher = makeDispatcher(store, server: server, failures: failures)
        let events = tally.follow(dispatcher.events())
        await dispatcher.start(connectivity: connectivity)
        return AppLife(store: store, dispatcher: dispatcher, events: events)
    }

    private func quietLog() -> OutboxLog.Configuration {
        var configuration = OutboxLog.Configuration()
        configuration.logger = Logger(label: "outbox.demo", factory: { _ in SwiftLogNoOpLogHandler() })
        return configuration
    }

    private func makeDispatcher(_ store: LogOutboxStore, server: DemoServers, failures: DemoFailures) -> OutboxDispatcher {
        let handlers = server.baseURLs.map { url in
            var http = HTTPOutboxHandler.Configuration(baseURL: url, tokenProvider: StaticTokenProvider("demo-token"))
            // Past a fault held 2 s (half-open), and past the round trip.
            http.requestTimeout = .seconds(1) + options.latency * 2
            return HTTPOutboxHandler(configuration: http)
        }
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumConcurrentDeliveries = Self.concurrency
        configuration.backoff = OutboxBackoff(base: .milliseconds(50), cap: .seconds(1))
        configuration.maximumAge = nil
        configuration.deliveryTimeout = .seconds(5)
        configuration.randomSeed = options.seed
        configuration.logger = failures.logger(label: "outbox.demo")
        return OutboxDispatcher(
            store: store, handlers: [:], fallback: RoundRobinHandler(handlers: handlers), configuration: configuration)
    }

    /// Enqueues the day's writes through the dispatcher's facade, as app
    /// code would, into `recorded` (which keeps what was recorded if an
    /// enqueue fails).
    private func recordOfflineDay(on dispatcher: OutboxDispatcher, into recorded: inout Recorded, random: inout SplitMix64) async throws {
        let albumCount = max(1, options.count / 10)
        let postCount = max(1, options.count / 20)
        let rejectCount = max(1, options.count / 25)
        var messageCount = max(1, options.count - albumCount * 3 - postCount - rejectCount)
        if options.count < 10 { messageCount = 1 }

        func remember(_ result: OutboxEnqueueResult) throws -> OutboxEntry.ID {
            switch result {
            case .enqueued(let entry):
                recorded.keys[entry.id] = entry.idempotencyKey
                return entry.id
            case .coalesced(let entry, let replaced):
                recorded.keys[entry.id] = entry.idempotencyKey
                recorded.keys[replaced] = nil
                recorded.coalesced += 1
                return entry.id
            case .duplicate(let id, _):
                return id
            }
        }

        for album in 0..<albumCount {
            // The album and its photos, all or nothing; the photos depend on
            // the album through their local: references.
            let results = try await dispatcher.transaction { transaction in
                let albumID = try transaction.add(CreateAlbum(title: "Trip \(album)"))
                for photo in 0..<2 { try transaction.add(AddPhoto(album: albumID, caption: "photo \(photo) of trip \(album)")) }
            }
            var ids: [OutboxEntry.ID] = []
            for result in results { ids.append(try remember(result)) }
            recorded.albums.append(ids[0])
            recorded.photos += ids.dropFirst()
        }
        for post in 0..<postCount {
            var liked = false
            for _ in 0..<(2 + random.next(below: 3)) {
                liked.toggle()
                recorded.toggles += 1
                recorded.likeEntries["post-\(post)"] = try remember(try await dispatcher.enqueue(ToggleLike(post: "post-\(post)", liked: liked)))
            }
            recorded.likes["post-\(post)"] = liked
        }
        for message in 0..<messageCount {
            let conversation = "conversation-\(message % max(4, options.count / 10))"
            recorded.messages.append(try remember(try await dispatcher.enqueue(SendMessage(conversation: conversation, text: "message \(message)"))))
        }
        for rejected in 0..<rejectCount {
            recorded.rejected.append(
                try remember(try await dispatcher.enqueue(SendMessage(conversation: "conversation-x", text: "spam \(rejected) #reject"))))
        }
    }
}
