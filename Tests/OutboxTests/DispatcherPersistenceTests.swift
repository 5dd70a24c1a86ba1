import Foundation
import Outbox
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The dispatcher over the durable store: what happens across restarts.
@Suite("Dispatcher across restarts", .timeLimit(.minutes(5)))
struct DispatcherPersistenceTests {
    @Test("the local→server mapping survives a restart between parent and child")
    func childAfterRestart() async throws {
        let root = TemporaryRoot()
        let store = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: quietConfiguration())
        let album = try await store.add(request(type: "post", endpoint: "/albums", payload: "album"))
        let body = #"{"album":"\#(album.localReference)"}"#
        let photo = try await store.add(
            request(type: "post", endpoint: "/albums/\(album.localReference)/photos", payload: body, dependencies: [album]))
        let first = ScriptedHandler()
        first.script("album", .delivered(serverID: "A-1"))
        first.script(body, .transient(reason: "offline", httpStatus: nil, retryAfter: .seconds(60)))
        let clock = ManualOutboxClock(now: Date())
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        // The parent goes through, the child fails once; then the process ends.
        let report = await OutboxDispatcher(store: store, handlers: ["post": first], configuration: configuration, clock: clock).flush()
        #expect(report.delivered == 1)
        #expect(first.deliveries(of: photo).first?.endpoint == "/albums/A-1/photos")
        try await store.close()

        let reopened = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: quietConfiguration())
        let later = ManualOutboxClock(now: clock.now().addingTimeInterval(61))
        let second = ScriptedHandler()
        second.script(body, .delivered(serverID: "P-1"))
        let afterRestart = await OutboxDispatcher(store: reopened, handlers: ["post": second], configuration: configuration, clock: later).flush()
        #expect(afterRestart.delivered == 1)
        let delivery = try #require(second.deliveries(of: photo).first)
        #expect(delivery.endpoint == "/albums/A-1/photos")
        #expect(String(decoding: delivery.payload, as: UTF8.self) == #"{"album":"A-1"}"#)
        try await reopened.close()
    }

    @Test("a process killed mid-delivery resends after restart with the same idempotency key")
    func killedMidFlight() async throws {
        let root = TemporaryRoot()
        let rootPath = root.path.string
        let keyFile = rootPath + "/key-seen-before-the-crash"
        await #expect(processExitsWith: .signal(SIGKILL)) { [rootPath = rootPath as String, keyFile = keyFile as String] in
            let store = try await LogOutboxStore.open(root: FilePath(rootPath), partition: "u", configuration: quietConfiguration())
            try await store.add(request(type: "post", payload: "pay 10 EUR"))
            let handler = ClosureOutboxHandler { delivery in
                // The request is "on the wire" when the process dies.
                FileManager.default.createFile(atPath: keyFile, contents: Data(delivery.idempotencyKey.utf8))
                kill(getpid(), SIGKILL)
                return .delivered(serverID: nil)
            }
            var configuration = OutboxDispatcherConfiguration()
            configuration.maximumAge = nil
            _ = await OutboxDispatcher(store: store, handlers: ["post": handler], configuration: configuration).flush()
        }
        let keyBeforeCrash = try String(contentsOfFile: keyFile, encoding: .utf8)
        let store = try await LogOutboxStore.open(root: root.path, partition: "u", configuration: quietConfiguration())
        let handler = ScriptedHandler()
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        let report = await OutboxDispatcher(store: store, handlers: ["post": handler], configuration: configuration).flush()
        #expect(report.delivered == 1)
        let delivery = try #require(handler.deliveries.first)
        #expect(delivery.idempotencyKey == keyBeforeCrash)
        #expect(delivery.attempt == 2)  // the interrupted attempt was counted
        try await store.close()
    }
}
