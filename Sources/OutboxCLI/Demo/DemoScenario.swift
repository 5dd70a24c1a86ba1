import Foundation
import Logging
import Outbox
import OutboxHTTP
import OutboxLog
import OutboxLogTesting
import OutboxReferenceServer
import IdempotencyKeyMiddleware
import Synchronization
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
        var progress: (String) -> Void
    }

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
    }

    let options: Options

    func run() async throws -> DemoReport {
        let started = ContinuousClock.now
        var random = SplitMix64(seed: options.seed)
        let server = try await ReferenceServer.start(
            faults: .mixed(rate: options.faultRate, seed: options.seed),
            keyStore: try await LogIdempotencyKeyStore.open(at: options.directory.appending("server-keys"), configuration: quietLog()))
        defer { Task { await server.stop() } }
        options.progress("reference server on \(server.baseURL) (faults: \(Int(options.faultRate * 100))% of writes)")

        // The app's process, first life: its disk can "die" with it.
        let root = options.directory.appending("app")
        let disk = CrashingFileSystem(base: PosixFileSystem(), crashAt: nil)
        var storeConfiguration = OutboxStoreConfiguration()
        storeConfiguration.log = quietLog()
        storeConfiguration.log.fileSystem = disk
        let store = try await LogOutboxStore.open(root: root, partition: "demo-user", configuration: storeConfiguration)
        let connectivity = ManualConnectivityMonitor(online: false)
        let tally = Tally()
        let firstLife = makeDispatcher(store, server: server)
        let firstEvents = tally.follow(firstLife.events())
        await firstLife.start(connectivity: connectivity)

        // Offline: the user keeps using the app.
        let recorded = try await recordOfflineDay(on: firstLife, random: &random)
        let expected = recorded.albums.count + recorded.photos.count + recorded.messages.count + recorded.likeEntries.count
        options.progress(
            "offline: recorded \(expected + recorded.rejected.count + recorded.coalesced) writes — "
                + "\(recorded.albums.count) albums, \(recorded.photos.count) photos of them (by local: id), "
                + "\(recorded.messages.count + recorded.rejected.count) messages, \(recorded.toggles) like toggles "
                + "coalesced to \(recorded.likeEntries.count)")

        // Back online; the app is killed about a third of the way through.
        connectivity.setOnline(true)
        options.progress("online: draining")
        await tally.wait(until: { $0.delivered >= max(1, expected / 3) }, progress: options.progress, total: expected)
        disk.crash()
        await firstLife.stop()
        firstEvents.cancel()
        try? await store.close()
        let beforeRestart = tally.snapshot.delivered
        options.progress("app killed after \(beforeRestart) deliveries; restarting")

        // Second life: same directory, new process state.
        storeConfiguration.log.fileSystem = PosixFileSystem()
        let reopened = try await LogOutboxStore.open(root: root, partition: "demo-user", configuration: storeConfiguration)
        let secondLife = makeDispatcher(reopened, server: server)
        let secondEvents = tally.follow(secondLife.events())
        await secondLife.start(connectivity: ManualConnectivityMonitor(online: true))
        await tally.wait(
            until: { _ in false }, progress: options.progress, total: expected,
            done: { try await reopened.summary().unsent == 0 })
        let summary = try await reopened.summary()
        let dead = try await reopened.entries(matching: OutboxFilter(statuses: [.dead]))
        await secondLife.stop()
        secondEvents.cancel()
        try await reopened.close()
        let elapsed = started.duration(to: .now)
        return DemoReport(
            recorded: recorded, tally: tally.snapshot, ledger: server.ledger, remaining: summary.unsent,
            quarantined: dead, elapsed: elapsed, deliveredBeforeRestart: beforeRestart)
    }

    private func quietLog() -> OutboxLog.Configuration {
        var configuration = OutboxLog.Configuration()
        configuration.logger = Logger(label: "outbox.demo", factory: { _ in SwiftLogNoOpLogHandler() })
        return configuration
    }

    private func makeDispatcher(_ store: LogOutboxStore, server: ReferenceServer) -> OutboxDispatcher {
        var http = HTTPOutboxHandler.Configuration(baseURL: server.baseURL, tokenProvider: StaticTokenProvider("demo-token"))
        http.requestTimeout = .seconds(1)
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumConcurrentDeliveries = 8
        configuration.backoff = OutboxBackoff(base: .milliseconds(50), cap: .seconds(1))
        configuration.maximumAge = nil
        configuration.deliveryTimeout = .seconds(5)
        configuration.randomSeed = options.seed
        configuration.logger = Logger(label: "outbox.demo", factory: { _ in SwiftLogNoOpLogHandler() })
        return OutboxDispatcher(
            store: store, handlers: [:], fallback: HTTPOutboxHandler(configuration: http), configuration: configuration)
    }

    /// Enqueues the day's writes through the dispatcher's facade, as app code would.
    private func recordOfflineDay(on dispatcher: OutboxDispatcher, random: inout SplitMix64) async throws -> Recorded {
        var recorded = Recorded()
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
            let albumID = try remember(try await dispatcher.enqueue(CreateAlbum(title: "Trip \(album)")))
            recorded.albums.append(albumID)
            for photo in 0..<2 {
                let id = try remember(try await dispatcher.enqueue(AddPhoto(album: albumID, caption: "photo \(photo) of trip \(album)")))
                recorded.photos.append(id)
            }
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
        return recorded
    }
}

// MARK: - The app's actions

struct CreateAlbum: OutboxAction, Encodable {
    static let type = "create_album"
    let title: String
    var method: String { "POST" }
    var endpoint: String { "/albums" }
}

struct AddPhoto: OutboxAction {
    static let type = "add_photo"
    let album: OutboxEntry.ID
    let caption: String
    var method: String { "POST" }
    var endpoint: String { "/albums/\(album.localReference)/photos" }
    var dependencies: [OutboxEntry.ID] { [album] }
    var headers: [String: String] { ["Content-Type": "application/json"] }
    func payload() throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: ["album": album.localReference, "caption": caption], options: [.sortedKeys]))
    }
}

struct ToggleLike: OutboxAction, Encodable {
    static let type = "toggle_like"
    let post: String
    let liked: Bool
    var method: String { "PUT" }
    var endpoint: String { "/posts/\(post)/like" }
    var coalescingKey: String? { "like:\(post)" }
}

struct SendMessage: OutboxAction, Encodable {
    static let type = "send_message"
    let conversation: String
    let text: String
    var method: String { "POST" }
    var endpoint: String { "/messages" }
    var scope: String? { conversation }
}

// MARK: - Counting what happens

/// Counts the dispatchers' events across both lives of the app.
final class Tally: Sendable {
    struct Counts: Sendable {
        var delivered = 0
        var retried = 0
        var quarantined = 0
        /// Distinct entries sent with `local:` ids replaced.
        var remapped = 0
        var deliveredIDs: Set<OutboxEntry.ID> = []
        var remappedIDs: Set<OutboxEntry.ID> = []
    }

    private let counts = Mutex(Counts())

    var snapshot: Counts { counts.withLock { $0 } }

    func follow(_ events: AsyncStream<OutboxEvent>) -> Task<Void, Never> {
        Task {
            for await event in events {
                counts.withLock { counts in
                    switch event {
                    case .delivered(let id, _):
                        if counts.deliveredIDs.insert(id).inserted { counts.delivered += 1 }
                    case .retryScheduled: counts.retried += 1
                    case .quarantined: counts.quarantined += 1
                    case .remapped(let id, _, _):
                        if counts.remappedIDs.insert(id).inserted { counts.remapped += 1 }
                    default: break
                    }
                }
            }
        }
    }

    /// Polls (on the real clock: this is the demo, not a test) until
    /// `condition` or `done` holds, printing progress twice a second.
    func wait(
        until condition: (Counts) -> Bool, progress: (String) -> Void, total: Int,
        done: () async throws -> Bool = { false }
    ) async {
        var ticks = 0
        while true {
            let now = snapshot
            if condition(now) { return }
            if (try? await done()) == true { return }
            ticks += 1
            if ticks % 10 == 0 {
                progress("  delivered \(now.delivered)/\(total), retries \(now.retried), quarantined \(now.quarantined)")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
