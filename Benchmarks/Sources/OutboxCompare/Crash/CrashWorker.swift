import Foundation
import Outbox
import OutboxBenchSupport
import OutboxHTTP
import OutboxLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process the crash section kills: `outbox-compare crash-worker ROLE
/// CONTENDER DIRECTORY ARGUMENT`, the benchmark binary run again by itself.
///
/// It reports on standard output, one line per event, each line written with
/// one `write(2)` of less than `PIPE_BUF` bytes (so lines from concurrent
/// producers never interleave, and a kill never leaves half a line):
///
///     O                    the store is open
///     A <entry id> <key>   an enqueue was acknowledged (returned) at the durability asked
///     D <entry id>         a delivery was confirmed: the server answered 2xx and the
///                          store recorded the success at the durability asked
///
/// A line is written only after the store call it reports has returned, so
/// every `A` line is a promise the parent holds the store to.
///
/// Roles: `enqueue` (ARGUMENT = producers, each enqueueing in a loop);
/// `flush` (ARGUMENT = the server's base URL: one producer enqueueing while a
/// drainer delivers); `finish` (ARGUMENT = the URL: deliver everything left,
/// then exit 0 — the parent's final, unkilled run); `fill` (ARGUMENT = a
/// count: that many pending entries, closed cleanly — for profiling a
/// restart by hand, see Docs/BENCHMARKS.md).
enum CrashWorker {
    enum Role: String { case enqueue, flush, finish, fill }
    enum Contender: String { case ours, sqlite }

    /// Runs the worker if the arguments ask for one; never returns then.
    static func runIfAsked(_ arguments: [String]) async {
        guard arguments.count >= 2, arguments[1] == "crash-worker" else { return }
        guard arguments.count == 6, let role = Role(rawValue: arguments[2]), let contender = Contender(rawValue: arguments[3])
        else {
            FileHandle.standardError.write(Data("crash-worker: bad arguments \(arguments.dropFirst())\n".utf8))
            exit(2)
        }
        do {
            switch (contender, role) {
            case (.ours, .enqueue): try await OursWorker(root: arguments[4]).enqueue(producers: Int(arguments[5]) ?? 1)
            case (.ours, .flush): try await OursWorker(root: arguments[4]).flush(baseURL: arguments[5], finish: false)
            case (.ours, .finish): try await OursWorker(root: arguments[4]).flush(baseURL: arguments[5], finish: true)
            case (.sqlite, .enqueue): try await SQLiteWorker(directory: arguments[4]).enqueue(producers: Int(arguments[5]) ?? 1)
            case (.sqlite, .flush): try await SQLiteWorker(directory: arguments[4]).flush(baseURL: arguments[5], finish: false)
            case (.sqlite, .finish): try await SQLiteWorker(directory: arguments[4]).flush(baseURL: arguments[5], finish: true)
            case (.ours, .fill): try await Workload.preloadStore(root: .init(arguments[4]), count: Int(arguments[5]) ?? 0)
            case (.sqlite, .fill):
                let database = try SQLiteOutbox(path: arguments[4] + "/outbox.sqlite", synchronous: .full)
                try database.preload(count: Int(arguments[5]) ?? 0, payload: String(decoding: payload, as: UTF8.self))
                try database.close()
            }
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("crash-worker \(role) \(contender): \(error)\n".utf8))
            exit(3)
        }
    }

    /// Writes one report line with a single `write(2)`.
    static func emit(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(1, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    exit(4)  // the parent is gone
                }
                offset += written
            }
        }
    }

    static let payload = Workload.jsonPayload(size: 256)
}

/// Our store: `LogOutboxStore` with `durable` enqueues and outcomes (the
/// attempt start `written`, as in the other scenarios), delivering through
/// `OutboxDispatcher` and `HTTPOutboxHandler` with default settings.
private struct OursWorker {
    let root: String

    func open() async throws -> LogOutboxStore {
        var configuration = Workload.storeConfiguration(enqueue: .durable, attempt: .written, outcome: .durable)
        configuration.log.preallocation =
            ProcessInfo.processInfo.environment[CrashSettings.preallocationVariable].flatMap(Int.init) ?? 0
        let store = try await LogOutboxStore.open(root: .init(root), partition: Workload.partition, configuration: configuration)
        CrashWorker.emit("O")
        return store
    }

    func enqueue(producers: Int) async throws {
        let store = try await open()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<producers {
                group.addTask {
                    while true {
                        let result = try await store.enqueue(Workload.request(payload: CrashWorker.payload))
                        guard case .enqueued(let entry) = result else { throw BenchError("enqueue was not new: \(result)") }
                        CrashWorker.emit("A \(entry.id) \(entry.idempotencyKey)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func flush(baseURL: String, finish: Bool) async throws {
        guard let url = URL(string: baseURL) else { throw BenchError("bad URL \(baseURL)") }
        let store = try await open()
        var configuration = OutboxDispatcherConfiguration()
        configuration.maximumAge = nil
        let dispatcher = OutboxDispatcher(
            store: store, handlers: ["send_message": HTTPOutboxHandler(baseURL: url)], configuration: configuration)
        let events = dispatcher.events()
        let reporter = Task {
            for await event in events {
                if case .delivered(let id, _) = event { CrashWorker.emit("D \(id)") }
            }
        }
        if finish {
            // Everything left, unkilled, including entries backing off after
            // an interrupted attempt.
            let report = await dispatcher.drain(until: Date().addingTimeInterval(600))
            let left = try await store.summary().unsent
            guard left == 0 else { throw BenchError("final drain left \(left) unsent: \(report.errors.prefix(3))") }
            await dispatcher.stop()
            reporter.cancel()
            try await store.close()
            return
        }
        await dispatcher.start()
        while true {
            let result = try await dispatcher.enqueue(Workload.request(payload: CrashWorker.payload))
            guard case .enqueued(let entry) = result else { throw BenchError("enqueue was not new: \(result)") }
            CrashWorker.emit("A \(entry.id) \(entry.idempotencyKey)")
        }
    }
}

/// SQLite through GRDB, WAL, `synchronous=FULL`, the seeds' table: one
/// transaction per enqueue, per claim of up to 64 rows and per
/// acknowledgement; 4 deliveries at a time (our dispatcher's default), over
/// the same HTTP transport as ours.
private struct SQLiteWorker {
    let directory: String

    func open() throws -> SQLiteOutbox {
        let database = try SQLiteOutbox(path: directory + "/outbox.sqlite", synchronous: .full)
        CrashWorker.emit("O")
        return database
    }

    func enqueue(producers: Int) async throws {
        let database = try open()
        let text = String(decoding: CrashWorker.payload, as: UTF8.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<producers {
                group.addTask {
                    while true {
                        let (id, key) = try await database.enqueueKeyed(payload: text)
                        CrashWorker.emit("A \(id) \(key)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func flush(baseURL: String, finish: Bool) async throws {
        let database = try SQLiteOutbox(path: directory + "/outbox.sqlite", synchronous: .full)
        // A relaunched app first puts back what the crash left in flight.
        try database.requeueInFlight()
        CrashWorker.emit("O")
        let text = String(decoding: CrashWorker.payload, as: UTF8.self)
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let drainer = Task { try await drain(database, baseURL: baseURL, wakeups: wakeups, untilEmpty: finish) }
        if finish {
            try await drainer.value
            try database.close()
            return
        }
        while true {
            let (id, key) = try await database.enqueueKeyed(payload: text)
            CrashWorker.emit("A \(id) \(key)")
            wake.yield()
        }
    }

    private func drain(
        _ database: SQLiteOutbox, baseURL: String, wakeups: AsyncStream<Void>, untilEmpty: Bool
    ) async throws {
        var waiting = wakeups.makeAsyncIterator()
        while true {
            let claimed = try await database.claimDueRows(limit: 64)
            if claimed.isEmpty {
                if untilEmpty { return }
                _ = await waiting.next()
                continue
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                var rows = claimed.makeIterator()
                func deliverNext() {
                    guard let row = rows.next() else { return }
                    group.addTask { try await deliver(row, database: database, baseURL: baseURL) }
                }
                for _ in 0..<4 { deliverNext() }
                while try await group.next() != nil { deliverNext() }
            }
        }
    }

    private func deliver(_ row: SQLiteOutbox.ClaimedRow, database: SQLiteOutbox, baseURL: String) async throws {
        guard let url = URL(string: baseURL + row.endpoint) else { throw BenchError("bad URL \(baseURL + row.endpoint)") }
        let request = HTTPTransportRequest(
            method: "POST", url: url,
            headers: [("Content-Type", "application/json"), ("Idempotency-Key", "\"\(row.key)\"")],
            body: Array(row.payload.utf8))
        switch await DefaultHTTPTransport.shared.send(request, timeout: .seconds(30)) {
        case .response(let status, _, _) where (200..<300).contains(status):
            try await database.acknowledge(row.id)
            CrashWorker.emit("D \(row.id)")
        default:
            try await database.release(row.id)
        }
    }
}
