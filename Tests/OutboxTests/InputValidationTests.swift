import Foundation
import Outbox
import OutboxLog
import Testing

/// Bad input gets a clear `OutboxError`, changes nothing, and leaves the
/// store usable: one test per value a caller can get wrong.
@Suite("Input validation")
struct InputValidationTests {
    /// The store still works after refusing something: an enqueue, a
    /// delivery and (for the log store) a reopen.
    static func expectUsable(_ subject: inout StoreUnderTest, holding count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await subject.store.summary().total == count, sourceLocation: sourceLocation)
        let id = try await subject.store.add(request(payload: "still works"))
        try await subject.store.deliver(id)
        try await subject.reopen()
        #expect(try await subject.store.summary().total == count, sourceLocation: sourceLocation)
    }

    /// Without payload files (`largePayloadThreshold = nil`): with them, a
    /// payload this large goes to a file (LargePayloadTests).
    @Test("an enqueue over the 16 MiB record limit is refused with the limit and the size; the store stays usable", arguments: StoreKind.allCases)
    func oversizeEnqueue(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind) { $0.largePayloadThreshold = nil }
        try await subject.store.add(request(payload: "before"))
        let payload = String(repeating: "x", count: 16 << 20)
        do {
            try await subject.store.add(request(payload: payload))
            Issue.record("a 16 MiB payload was accepted")
        } catch let error as OutboxError {
            #expect(error.message.contains("16777216"), "\(error)")
            #expect(error.message.contains("\(16 << 20)") || error.message.contains("bytes"), "\(error)")
            #expect(error.code != .storage && error.code != .closed, "\(error)")
        }
        try await Self.expectUsable(&subject, holding: 1)
        try await subject.close()
    }

    /// One bad value in an otherwise good request.
    struct BadRequest: Sendable, CustomTestStringConvertible {
        var name: String
        var code: OutboxError.Code
        var change: @Sendable (inout OutboxEnqueueRequest) -> Void
        var testDescription: String { name }

        static let nan = Date(timeIntervalSince1970: .nan)

        static let all: [BadRequest] = [
            BadRequest(name: "empty type", code: .invalidArgument) { $0.type = "" },
            BadRequest(name: "type over 1 KiB", code: .invalidArgument) { $0.type = String(repeating: "t", count: 1025) },
            BadRequest(name: "empty scope", code: .invalidArgument) { $0.scope = "" },
            BadRequest(name: "scope over 1 KiB", code: .invalidArgument) { $0.scope = String(repeating: "s", count: 1025) },
            BadRequest(name: "empty coalescing key", code: .invalidArgument) { $0.coalescingKey = "" },
            BadRequest(name: "empty method", code: .invalidArgument) { $0.method = "" },
            BadRequest(name: "method with a space", code: .invalidArgument) { $0.method = "PO ST" },
            BadRequest(name: "method with CRLF", code: .invalidArgument) { $0.method = "POST\r\nX-Evil: 1" },
            BadRequest(name: "endpoint without a leading slash", code: .invalidArgument) { $0.endpoint = "posts" },
            BadRequest(name: "endpoint with a space", code: .invalidArgument) { $0.endpoint = "/posts HTTP/1.1" },
            BadRequest(name: "endpoint with CRLF", code: .invalidArgument) { $0.endpoint = "/posts\r\nHost: evil" },
            BadRequest(name: "endpoint over 8 KiB", code: .invalidArgument) { $0.endpoint = "/" + String(repeating: "p", count: 8192) },
            BadRequest(name: "Authorization header", code: .invalidArgument) { $0.headers["Authorization"] = "Bearer abc" },
            BadRequest(name: "cookie header", code: .invalidArgument) { $0.headers["cookie"] = "session=1" },
            BadRequest(name: "Idempotency-Key header", code: .invalidArgument) { $0.headers["Idempotency-Key"] = "k" },
            BadRequest(name: "Content-Length header", code: .invalidArgument) { $0.headers["Content-Length"] = "0" },
            BadRequest(name: "Host header", code: .invalidArgument) { $0.headers["Host"] = "evil.example" },
            BadRequest(name: "header name with a space", code: .invalidArgument) { $0.headers["X Bad"] = "1" },
            BadRequest(name: "empty header name", code: .invalidArgument) { $0.headers[""] = "1" },
            BadRequest(name: "header value with CRLF", code: .invalidArgument) { $0.headers["X-Note"] = "a\r\nX-Evil: 1" },
            BadRequest(name: "header value with NUL", code: .invalidArgument) { $0.headers["X-Note"] = "a\u{0}b" },
            BadRequest(name: "one header twice, in two cases", code: .invalidArgument) { $0.headers["content-type"] = "text/plain" },
            BadRequest(name: "huge header (1 MiB)", code: .invalidArgument) {
                $0.headers["X-Huge"] = String(repeating: "h", count: 1 << 20)
            },
            BadRequest(name: "257 headers", code: .invalidArgument) { request in
                for index in 0..<257 { request.headers["X-H\(index)"] = "v" }
            },
            BadRequest(name: "unknown dependency", code: .unknownDependency) { $0.dependencies = [OutboxEntry.ID()] },
            BadRequest(name: "dependency on itself", code: .invalidArgument) { $0.dependencies = [$0.id] },
            BadRequest(name: "1,025 dependencies", code: .invalidArgument) {
                $0.dependencies = (0..<1025).map { _ in OutboxEntry.ID() }
            },
            BadRequest(name: "priority above Int16", code: .invalidArgument) { $0.priority = 40_000 },
            BadRequest(name: "priority below Int16", code: .invalidArgument) { $0.priority = -40_000 },
            BadRequest(name: "maxAttempts 0", code: .invalidArgument) { $0.maxAttempts = 0 },
            BadRequest(name: "maxAttempts -1", code: .invalidArgument) { $0.maxAttempts = -1 },
            BadRequest(name: "maxAttempts above UInt16", code: .invalidArgument) { $0.maxAttempts = 70_000 },
            BadRequest(name: "createdAt NaN", code: .invalidArgument) { $0.createdAt = nan },
            BadRequest(name: "createdAt infinite", code: .invalidArgument) { $0.createdAt = .distantFuture.addingTimeInterval(.infinity) },
            BadRequest(name: "createdAt in the year 10000", code: .invalidArgument) {
                $0.createdAt = Date(timeIntervalSince1970: 253_402_300_800 + 86_400)
            },
            BadRequest(name: "empty idempotency key", code: .invalidArgument) { $0.idempotencyKey = "" },
            BadRequest(name: "idempotency key with a space", code: .invalidArgument) { $0.idempotencyKey = "order 7" },
            BadRequest(name: "idempotency key with CRLF", code: .invalidArgument) { $0.idempotencyKey = "k\r\nX-Evil: 1" },
            BadRequest(name: "non-ASCII idempotency key", code: .invalidArgument) { $0.idempotencyKey = "clé" },
            BadRequest(name: "idempotency key of 256 characters", code: .invalidArgument) {
                $0.idempotencyKey = String(repeating: "k", count: 256)
            },
            BadRequest(name: "payload over the record limit", code: .tooLarge) { $0.payload = [UInt8](repeating: 1, count: (16 << 20) + 1) },
            BadRequest(name: "payload under the limit, record over it", code: .tooLarge) {
                $0.payload = [UInt8](repeating: 1, count: (16 << 20) - 16)
            },
        ]
    }

    @Test(
        "a request with one bad value is refused with a clear error; nothing changes; the store stays usable",
        arguments: BadRequest.all, StoreKind.allCases)
    func badRequest(_ bad: BadRequest, kind: StoreKind) async throws {
        // The record limit holds only without payload files (see oversizeEnqueue).
        var subject = try await StoreUnderTest.make(kind) { $0.largePayloadThreshold = nil }
        let kept = try await subject.store.add(request(payload: "kept"))
        var refused = request(payload: "refused")
        bad.change(&refused)
        do {
            try await subject.store.add(refused)
            Issue.record("\(bad.name) was accepted")
        } catch let error as OutboxError {
            #expect(error.code == bad.code, "\(error)")
            #expect(error.code != .storage && !error.message.isEmpty)
        }
        #expect(try await subject.store.entry(refused.id) == nil)
        #expect(try await subject.store.entries(matching: .all).map(\.id) == [kept])
        try await Self.expectUsable(&subject, holding: 1)
        try await subject.close()
    }

    @Test("the limits themselves are accepted", arguments: StoreKind.allCases)
    func valuesAtTheLimits(kind: StoreKind) async throws {
        let subject = try await StoreUnderTest.make(kind)
        var request = request(payload: "edge")
        request.type = String(repeating: "t", count: OutboxLimits.maximumNameBytes)
        request.priority = OutboxLimits.priorities.upperBound
        request.maxAttempts = OutboxLimits.attempts.upperBound
        request.idempotencyKey = String(repeating: "k", count: OutboxLimits.idempotencyKeyLength.upperBound)
        request.headers["X-Tab"] = "a\tb"
        let result = try await subject.store.enqueue(request)
        let entry = try #require(result.newEntry, "expected a new entry, got \(result)")
        #expect(entry.priority == Int(Int16.max))
        #expect(entry.maxAttempts == Int(UInt16.max))
        try await subject.close()
    }

    /// One bad value in a call on an existing entry.
    struct BadCall: Sendable, CustomTestStringConvertible {
        var name: String
        var call: @Sendable (any OutboxStore, OutboxEntry.ID) async throws -> Void
        var testDescription: String { name }

        static let nan = Date(timeIntervalSince1970: .nan)

        static let all: [BadCall] = [
            BadCall(name: "claimDue at NaN") { store, _ in _ = try await store.claimDue(at: nan, limit: 1, lease: .seconds(30)) { _ in true } },
            BadCall(name: "claimDue with a negative lease") { store, _ in
                _ = try await store.claimDue(at: Date(), limit: 1, lease: .seconds(-1)) { _ in true }
            },
            BadCall(name: "claimDue with a lease of 1,000 years") { store, _ in
                _ = try await store.claimDue(at: Date(), limit: 1, lease: .seconds(1000 * 365 * 86_400)) { _ in true }
            },
            BadCall(name: "dueEntries at NaN") { store, _ in _ = try await store.dueEntries(at: nan, limit: 1) },
            BadCall(name: "beginAttempt with a negative lease") { store, id in _ = try await store.beginAttempt(id, at: Date(), lease: .seconds(-5)) },
            BadCall(name: "beginAttempt at infinity") { store, id in
                _ = try await store.beginAttempt(id, at: Date(timeIntervalSince1970: .infinity), lease: .seconds(5))
            },
            BadCall(name: "recordSuccess with a 1 MiB server id") { store, id in
                _ = try await store.beginAttempt(id, at: Date(), lease: .seconds(30))
                try await store.recordSuccess(id, serverID: String(repeating: "i", count: 1 << 20), at: Date())
            },
            BadCall(name: "recordSuccess at NaN") { store, id in
                _ = try await store.beginAttempt(id, at: Date(), lease: .seconds(30))
                try await store.recordSuccess(id, serverID: "s", at: nan)
            },
            BadCall(name: "recordFailure retrying at NaN") { store, id in
                _ = try await store.beginAttempt(id, at: Date(), lease: .seconds(30))
                _ = try await store.recordFailure(id, OutboxFailure(.transient, httpStatus: 503, message: "503"), retryAt: nan)
            },
            BadCall(name: "retry at NaN") { store, id in
                _ = try await store.quarantine(id, OutboxFailure(.permanent, message: "by hand"))
                _ = try await store.retry(id, at: nan)
            },
            BadCall(name: "prune at NaN") { store, _ in try await store.prune(at: nan) },
        ]
    }

    @Test("a call with a bad time, lease or server id is refused and changes nothing", arguments: BadCall.all, StoreKind.allCases)
    func badCall(_ bad: BadCall, kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let id = try await subject.store.add(request(payload: "kept"))
        let before = try await subject.store.summary()
        do {
            try await bad.call(subject.store, id)
            Issue.record("\(bad.name) was accepted")
        } catch let error as OutboxError {
            #expect(error.code == .invalidArgument, "\(error)")
        }
        // The steps before the bad value may have run (an attempt begun);
        // the refused one itself changed nothing.
        let after = try await subject.store.summary()
        #expect(after.total == before.total)
        #expect(after.count(.succeeded) == 0 && after.count(.waitingToRetry) == 0 && after.count(.pending) + after.count(.inFlight) + after.count(.quarantined) == 1)
        try await Self.expectUsable(&subject, holding: 1)
        try await subject.close()
    }

    @Test("opening at NaN is refused")
    func openAtNaN() async throws {
        let root = TemporaryRoot()
        await expectOutboxError(.invalidArgument) {
            try await LogOutboxStore.open(root: root.path, partition: "p", configuration: quietConfiguration(), now: Date(timeIntervalSince1970: .nan))
        }
    }

    @Test("a long failure message is kept the same way in memory and on disk", arguments: StoreKind.allCases)
    func longMessages(kind: StoreKind) async throws {
        var subject = try await StoreUnderTest.make(kind)
        let id = try await subject.store.add(request())
        _ = try await subject.store.beginAttempt(id, at: Date(), lease: .seconds(30))
        _ = try await subject.store.recordFailure(
            id, OutboxFailure(.transient, httpStatus: 500, message: String(repeating: "e", count: 100_000)), retryAt: Date())
        let inMemory = try await subject.store.entry(id)?.lastFailure
        #expect(inMemory?.message?.count == 2048)
        try await subject.reopen()
        #expect(try await subject.store.entry(id)?.lastFailure == inMemory)
        try await subject.close()
    }

    /// One bad value in a store configuration.
    struct BadStoreConfiguration: Sendable, CustomTestStringConvertible {
        var name: String
        var change: @Sendable (inout OutboxStoreConfiguration) -> Void
        var testDescription: String { name }

        static let all: [BadStoreConfiguration] = [
            BadStoreConfiguration(name: "maximumEntries 0") { $0.maximumEntries = 0 },
            BadStoreConfiguration(name: "maximumEntries -1") { $0.maximumEntries = -1 },
            BadStoreConfiguration(name: "maximumBytes 0") { $0.maximumBytes = 0 },
            BadStoreConfiguration(name: "defaultMaximumAttempts 0") { $0.defaultMaximumAttempts = 0 },
            BadStoreConfiguration(name: "defaultMaximumAttempts above UInt16") { $0.defaultMaximumAttempts = 70_000 },
            BadStoreConfiguration(name: "negative succeededRetention") { $0.succeededRetention = .seconds(-1) },
            BadStoreConfiguration(name: "negative mappingRetention") { $0.mappingRetention = .milliseconds(-1) },
            BadStoreConfiguration(name: "mappingRetention of 1,000 years") { $0.mappingRetention = .seconds(1000 * 365 * 86_400) },
        ]
    }

    @Test("a log store with a bad configuration value does not open, and creates nothing", arguments: BadStoreConfiguration.all)
    func badLogStoreConfiguration(_ bad: BadStoreConfiguration) async throws {
        let root = TemporaryRoot()
        var configuration = quietConfiguration()
        bad.change(&configuration)
        let path = root.path.appending("outbox")
        await expectOutboxError(.invalidArgument) { try await LogOutboxStore.open(root: path, partition: "p", configuration: configuration) }
        #expect(!FileManager.default.fileExists(atPath: path.string))
    }

    @Test("an in-memory store with a bad configuration value refuses every call, naming the value", arguments: BadStoreConfiguration.all)
    func badMemoryStoreConfiguration(_ bad: BadStoreConfiguration) async throws {
        var configuration = quietConfiguration()
        bad.change(&configuration)
        let store = InMemoryOutboxStore(partition: "p", configuration: configuration)
        do {
            try await store.add(request())
            Issue.record("enqueued with \(bad.name)")
        } catch let error as OutboxError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("OutboxStoreConfiguration."), "\(error)")
        }
        await expectOutboxError(.invalidArgument) { try await store.summary() }
    }

    /// One bad value in a dispatcher configuration.
    struct BadDispatcherConfiguration: Sendable, CustomTestStringConvertible {
        var name: String
        var field: String
        var change: @Sendable (inout OutboxDispatcherConfiguration) -> Void
        var testDescription: String { name }

        static let all: [BadDispatcherConfiguration] = [
            BadDispatcherConfiguration(name: "no concurrent deliveries", field: "maximumConcurrentDeliveries") {
                $0.maximumConcurrentDeliveries = 0
            },
            BadDispatcherConfiguration(name: "negative backoff base", field: "backoff.base") {
                $0.backoff = OutboxBackoff(base: .seconds(-1), cap: .seconds(10))
            },
            BadDispatcherConfiguration(name: "negative backoff cap", field: "backoff.cap") {
                $0.backoff = OutboxBackoff(base: .seconds(1), cap: .seconds(-10))
            },
            BadDispatcherConfiguration(name: "negative maximum age", field: "maximumAge") { $0.maximumAge = .seconds(-60) },
            BadDispatcherConfiguration(name: "zero maximum age", field: "maximumAge") { $0.maximumAge = .zero },
            BadDispatcherConfiguration(name: "zero delivery timeout", field: "deliveryTimeout") { $0.deliveryTimeout = .zero },
            BadDispatcherConfiguration(name: "negative delivery timeout", field: "deliveryTimeout") { $0.deliveryTimeout = .seconds(-1) },
            BadDispatcherConfiguration(name: "delivery timeout of 1,000 years", field: "deliveryTimeout") {
                $0.deliveryTimeout = .seconds(1000 * 365 * 86_400)
            },
            BadDispatcherConfiguration(name: "negative lease grace", field: "leaseGrace") { $0.leaseGrace = .seconds(-30) },
            BadDispatcherConfiguration(name: "negative prune interval", field: "pruneInterval") { $0.pruneInterval = .seconds(-1) },
        ]
    }

    @Test("a dispatcher with a bad configuration value refuses to work, naming the value", arguments: BadDispatcherConfiguration.all)
    func badDispatcherConfiguration(_ bad: BadDispatcherConfiguration) async throws {
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = quietConfiguration().log.logger
        bad.change(&configuration)
        #expect(throws: OutboxError.self) { try configuration.validate() }
        do { try configuration.validate() } catch { #expect(error.message.contains(bad.field), "\(error)") }

        let store = InMemoryOutboxStore(partition: "p", configuration: quietConfiguration())
        let waiting = try await store.add(request(type: "post"))
        let handler = ScriptedHandler()
        let dispatcher = OutboxDispatcher(store: store, handlers: ["post": handler], configuration: configuration)
        await expectOutboxError(.invalidArgument) { try await dispatcher.enqueue(request(type: "post")) }
        let report = await dispatcher.flush()
        #expect(report.errors.count == 1 && report.errors[0].code == .invalidArgument && report.errors[0].message.contains(bad.field), "\(report.errors)")
        #expect(handler.deliveries.isEmpty)
        #expect(try await store.entry(waiting)?.status == .pending)
    }
}
