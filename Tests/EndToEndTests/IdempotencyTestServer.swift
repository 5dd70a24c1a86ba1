import Foundation
import HTTPTypes
import Hummingbird
@testable import IdempotencyKeyMiddleware
import Logging
import NIOCore
import OutboxLocking
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The built-in key stores, for tests that must hold for both.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case log

    var testDescription: String { rawValue == "log" ? "LogIdempotencyKeyStore" : "InMemoryIdempotencyKeyStore" }

    /// A fresh store of this kind (the log one in its own temporary directory).
    func make() async throws -> TestKeyStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)").path
        switch self {
        case .memory: return TestKeyStore(store: InMemoryIdempotencyKeyStore(), directory: directory)
        case .log: return TestKeyStore(store: try await LogIdempotencyKeyStore.open(at: .init(directory)), directory: directory)
        }
    }
}

/// A store under test, and what a test needs to look inside it.
struct TestKeyStore: Sendable {
    let store: any IdempotencyKeyStore
    let directory: String

    /// Keys the store holds.
    var count: Int {
        switch store {
        case let memory as InMemoryIdempotencyKeyStore: memory.count
        case let log as LogIdempotencyKeyStore: log.count
        default: -1
        }
    }

    func remove() async {
        try? await (store as? LogIdempotencyKeyStore)?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A one-shot gate the handler waits on, to hold a request in progress.
final class Gate: Sendable {
    private struct State {
        var open = false
        var entered = 0
        var held: [CheckedContinuation<Void, Never>] = []
        var arrivals: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Called by the handler: waits until the gate is opened.
    func pass() async {
        await withCheckedContinuation { continuation in
            let (go, arrivals) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                state.entered += 1
                let arrivals = state.arrivals
                state.arrivals = []
                if state.open { return (true, arrivals) }
                state.held.append(continuation)
                return (false, arrivals)
            }
            for arrival in arrivals { arrival.resume() }
            if go { continuation.resume() }
        }
    }

    /// Counts an arrival without waiting, for code that cannot await (a
    /// clock read): ``waitForArrival()`` then returns.
    func arrive() {
        let arrivals = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.entered += 1
            defer { state.arrivals = [] }
            return state.arrivals
        }
        for arrival in arrivals { arrival.resume() }
    }

    /// How many requests reached the gate.
    var entered: Int { state.withLock { $0.entered } }

    /// Returns once a request has reached the gate.
    func waitForArrival() async {
        await withCheckedContinuation { continuation in
            let arrived = state.withLock { state -> Bool in
                if state.entered > 0 { return true }
                state.arrivals.append(continuation)
                return false
            }
            if arrived { continuation.resume() }
        }
    }

    func open() {
        let held = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }
}

/// The middleware's clock, moved by hand.
final class TestClock: Sendable {
    let now = Locked(Date(timeIntervalSince1970: 1_900_000_000))
    var date: Date { now.withLock { $0 } }
    func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

final class CreatedCounter: Sendable {
    private let value = Locked(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
}

/// A Hummingbird server with the middleware in front of:
///
/// ```
/// POST /orders              creates an order (counted) → 201 {"id":"order-N"}
/// POST /reports?size=N      creates a report (counted) → 201 with an N-byte body
///                            (&location=L: and a Location header of L bytes)
/// POST /flaky               503 the first time it is called (applies nothing), then like /orders
/// POST /refused             throws HTTPError 422 the first time it is called (counted), then like /orders
/// POST /crashing            throws a plain error the first time it is called (applies nothing), then like /orders
/// GET  /health              → 200 (not taking part; still triggers the expiry sweep)
/// ```
struct IdempotencyTestServer {
    let port: Int
    let task: Task<Void, any Error>
    let created: CreatedCounter

    static func start(
        store: any IdempotencyKeyStore, clock: TestClock = TestClock(), gate: Gate? = nil,
        configure: (inout IdempotencyMiddleware<BasicRequestContext>.Configuration) -> Void = { _ in }
    ) async throws -> IdempotencyTestServer {
        let counter = CreatedCounter()
        var configuration = IdempotencyMiddleware<BasicRequestContext>.Configuration()
        configuration.retention = .seconds(3600)
        configuration.now = { clock.date }
        configure(&configuration)
        let router = Router()
        router.add(middleware: IdempotencyMiddleware(store: store, configuration: configuration))
        router.post("orders") { _, _ -> Response in
            if let gate { await gate.pass() }
            let number = counter.next()
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .created, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"id":"order-\#(number)"}"#)))
        }
        router.post("reports") { request, _ -> Response in
            let size = request.uri.queryParameters.get("size", as: Int.self) ?? 0
            let number = counter.next()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain"
            if let location = request.uri.queryParameters.get("location", as: Int.self) {
                headers[.location] = "/reports/" + String(repeating: "r", count: max(0, location - 9))
            }
            let body = "report-\(number):" + String(repeating: "x", count: max(0, size - "report-\(number):".utf8.count))
            return Response(status: .created, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
        }
        let flakyCalls = CreatedCounter()
        router.post("flaky") { _, _ -> Response in
            guard flakyCalls.next() > 1 else { return Response(status: .serviceUnavailable) }
            let number = counter.next()
            return Response(status: .created, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"id":"flaky-\#(number)"}"#)))
        }
        let refusedCalls = CreatedCounter()
        router.post("refused") { _, _ -> Response in
            let number = counter.next()
            guard refusedCalls.next() > 1 else { throw HTTPError(.unprocessableContent, message: "refused-\(number)") }
            return Response(status: .created, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"id":"refused-\#(number)"}"#)))
        }
        let crashingCalls = CreatedCounter()
        router.post("crashing") { _, _ -> Response in
            struct Crashed: Error {}
            guard crashingCalls.next() > 1 else { throw Crashed() }
            let number = counter.next()
            return Response(status: .created, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"id":"crashing-\#(number)"}"#)))
        }
        router.get("health") { _, _ in "ok" }
        var logger = Logger(label: "middleware-test")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        return IdempotencyTestServer(port: await iterator.next() ?? 0, task: task, created: counter)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    func post(_ path: String = "/orders", key: String?, body: String = "{}") async throws -> HTTPReply {
        try await HTTPReply.send("POST", URL(string: "http://127.0.0.1:\(port)\(path)")!, key: key, body: body)
    }

    func get(_ path: String) async throws -> HTTPReply {
        try await HTTPReply.send("GET", URL(string: "http://127.0.0.1:\(port)\(path)")!, key: nil, body: nil)
    }
}

/// One HTTP exchange, as a test sees it.
struct HTTPReply: Sendable {
    var status: Int
    var body: String
    /// Lower-case names.
    var headers: [String: String]

    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }

    /// `timeout` guards a hang only: in the whole parallel test run a held
    /// request can wait longer than half a minute for the two-thread pool.
    static func send(
        _ method: String, _ url: URL, key: String?, body: String?, timeout: TimeInterval = 120, session: URLSession = .shared
    ) async throws -> HTTPReply {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if let body { request.httpBody = Data(body.utf8) }
        if let key { request.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPReply(status: http.statusCode, body: String(decoding: data, as: UTF8.self), headers: headers)
    }
}
