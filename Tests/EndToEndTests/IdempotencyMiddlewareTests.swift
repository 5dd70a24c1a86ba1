import Foundation
import HTTPTypes
import Hummingbird
import IdempotencyKeyMiddleware
import Logging
import NIOCore
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Idempotency-Key contract, over real HTTP.
@Suite("Idempotency-Key middleware", .serialized, .timeLimit(.minutes(1)))
struct IdempotencyMiddlewareTests {
    /// A one-shot gate the handler waits on, to hold a request in progress.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>], entered: Int)>((false, [], 0))
        func pass() async {
            await withCheckedContinuation { continuation in
                let go = state.withLock { state -> Bool in
                    state.entered += 1
                    if state.open { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if go { continuation.resume() }
            }
        }
        var entered: Int { state.withLock { $0.entered } }
        func open() {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    final class Clock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_900_000_000))
    }

    /// A server whose POST /orders creates an order (counted), behind the
    /// middleware; returns its port, its task and the count of orders created.
    static func start(store: any IdempotencyKeyStore, clock: Clock = Clock(), gate: Gate? = nil) async throws -> (Int, Task<Void, any Error>, @Sendable () -> Int) {
        let counter = CreatedCounter()
        var configuration = IdempotencyMiddleware<BasicRequestContext>.Configuration()
        configuration.retention = .seconds(3600)
        configuration.now = { clock.now.withLock { $0 } }
        let router = Router()
        router.add(middleware: IdempotencyMiddleware(store: store, configuration: configuration))
        router.post("orders") { request, _ -> Response in
            if let gate { await gate.pass() }
            let number = counter.next()
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .created, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"id":"order-\#(number)"}"#)))
        }
        var logger = Logger(label: "middleware-test")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        return (await iterator.next() ?? 0, task, { counter.count })
    }

    final class CreatedCounter: Sendable {
        private let value = Mutex(0)
        func next() -> Int { value.withLock { $0 += 1; return $0 } }
        var count: Int { value.withLock { $0 } }
    }

    static func post(_ port: Int, key: String?, body: String) async throws -> (Int, String, [String: String]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/orders")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        if let key { request.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields { if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value } }
        return (http.statusCode, String(decoding: data, as: UTF8.self), headers)
    }

    @Test("a repeat replays the first response; the write runs once", arguments: ["memory", "log"])
    func replay(storeKind: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store: any IdempotencyKeyStore = storeKind == "memory"
            ? InMemoryIdempotencyKeyStore() : try await LogIdempotencyKeyStore.open(at: .init(directory))
        let (port, task, created) = try await Self.start(store: store)
        defer { task.cancel() }
        let first = try await Self.post(port, key: "key-1", body: #"{"item":"book"}"#)
        let second = try await Self.post(port, key: "key-1", body: #"{"item":"book"}"#)
        #expect(first.0 == 201)
        #expect(second.0 == 201)
        #expect(second.1 == first.1)
        #expect(second.2["idempotent-replayed"] == "true")
        #expect(first.2["idempotent-replayed"] == nil)
        #expect(created() == 1)
        // A quoted (Structured Field) key is the same key.
        #expect(try await Self.post(port, key: "\"key-1\"", body: #"{"item":"book"}"#).1 == first.1)
        #expect(created() == 1)
    }

    @Test("the same key with a different request is 422; a missing key is 400; a malformed one 400")
    func mismatchAndMissing() async throws {
        let (port, task, created) = try await Self.start(store: InMemoryIdempotencyKeyStore())
        defer { task.cancel() }
        _ = try await Self.post(port, key: "key-2", body: #"{"item":"book"}"#)
        let reused = try await Self.post(port, key: "key-2", body: #"{"item":"lamp"}"#)
        #expect(reused.0 == 422)
        #expect(reused.2["content-type"] == "application/problem+json")
        #expect(reused.1.contains("key-reused"))
        let missing = try await Self.post(port, key: nil, body: "{}")
        #expect(missing.0 == 400)
        #expect(missing.1.contains("missing-key"))
        #expect(try await Self.post(port, key: String(repeating: "k", count: 300), body: "{}").0 == 400)
        #expect(created() == 1)
    }

    @Test("a repeat while the first is still running is 409, and the first completes normally")
    func inProgress() async throws {
        let gate = Gate()
        let (port, task, created) = try await Self.start(store: InMemoryIdempotencyKeyStore(), gate: gate)
        defer { task.cancel() }
        let first = Task { try await Self.post(port, key: "key-3", body: "{}") }
        while gate.entered == 0 { await Task.yield() }
        let concurrent = try await Self.post(port, key: "key-3", body: "{}")
        #expect(concurrent.0 == 409)
        #expect(concurrent.1.contains("in-progress"))
        gate.open()
        #expect(try await first.value.0 == 201)
        #expect(created() == 1)
    }

    @Test("keys expire after the retention window: the same key then runs as new")
    func expiry() async throws {
        let clock = Clock()
        let store = InMemoryIdempotencyKeyStore()
        let (port, task, created) = try await Self.start(store: store, clock: clock)
        defer { task.cancel() }
        _ = try await Self.post(port, key: "key-4", body: "{}")
        clock.now.withLock { $0 = $0.addingTimeInterval(1800) }
        #expect(try await Self.post(port, key: "key-4", body: "{}").2["idempotent-replayed"] == "true")
        clock.now.withLock { $0 = $0.addingTimeInterval(3600) }
        #expect(try await store.expire(now: clock.now.withLock { $0 }) == 1)
        #expect(store.count == 0)
        #expect(try await Self.post(port, key: "key-4", body: "{}").2["idempotent-replayed"] == nil)
        #expect(created() == 2)
    }

    @Test("the log-backed store replays a response after a server restart")
    func durableAcrossRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await LogIdempotencyKeyStore.open(at: .init(directory))
        let (port, task, _) = try await Self.start(store: store)
        let first = try await Self.post(port, key: "key-5", body: "{}")
        task.cancel()
        _ = try? await task.value
        try await store.close()

        let reopened = try await LogIdempotencyKeyStore.open(at: .init(directory))
        let (port2, task2, created) = try await Self.start(store: reopened)
        defer { task2.cancel() }
        let again = try await Self.post(port2, key: "key-5", body: "{}")
        #expect(again.1 == first.1)
        #expect(again.2["idempotent-replayed"] == "true")
        #expect(created() == 0)
        _ = port
    }
}
