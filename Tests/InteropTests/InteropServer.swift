import Foundation
import OutboxLocking

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run of `Scripts/interop/interop_server.py`: a small API behind a
/// third-party Idempotency-Key middleware from PyPI, with a loopback fault
/// proxy in front, in a child process of the test. It speaks JSON lines on
/// its standard input and output, and ends when its standard input does —
/// so it cannot outlive the test process.
final class InteropServer: Sendable {
    /// The middlewares the suite runs against (pinned in Scripts/interop/requirements.txt).
    enum Middleware: String, CaseIterable, Sendable, CustomStringConvertible {
        case asgiIdempotencyHeader = "asgi-idempotency-header"
        case fastapiIdempotency = "fastapi-idempotency"
        case drfIdempotency = "drf-idempotency"
        var description: String { rawValue }
    }

    /// What the server applied and what the proxy did.
    struct Report: Sendable {
        /// Idempotency-Key → the ids the API created for it: the server's own record.
        var applied: [String: [String]]
        var requests: Int
        var faults: [String: Int]
        /// The keys of the requests that met a fault.
        var faultedKeys: Set<String>
        /// Whole 2xx answers marked `Idempotent-Replayed: true` that reached
        /// the client: what the outbox must count as replays.
        var replayedAnswers: Int
        /// Faults the client cannot see: a non-2xx answer (an in-progress
        /// 409) cut mid-body where the body ends with the connection, which
        /// looks whole to HTTP.
        var unnoticeableCuts: Int
        var totalFaults: Int { faults.values.reduce(0, +) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The package's root, from this file's place in it.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The virtual environment's Python: `$OUTBOX_INTEROP_PYTHON`, or
    /// `.build/pyenv/bin/python` (made by Scripts/interop/setup-venv.sh).
    static let python: String = ProcessInfo.processInfo.environment["OUTBOX_INTEROP_PYTHON"]
        ?? packageRoot.appendingPathComponent(".build/pyenv/bin/python").path

    static var venvExists: Bool { FileManager.default.isExecutableFile(atPath: python) }
    /// CI must run the suite: a missing environment there is a failure, not a skip.
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false }

    let app: Int
    let proxy: Int
    private let process: Process
    private let input: FileHandle
    private let lines: LineQueue
    private let stderrPath: String

    /// Starts the server and its proxy; returns once both listen.
    init(
        _ middleware: Middleware, rate: Double = 0, fault: String = "close-before-answer", applySeconds: Double = 0.3,
        dropAfter: Double = 0.1, seed: Int = 1
    ) async throws {
        if let missing = InteropEnvironment.failure(await InteropEnvironment.outcome.value) {
            throw Failure(description: "no Python virtual environment at \(Self.python): \(missing)")
        }
        let script = Self.packageRoot.appendingPathComponent("Scripts/interop/interop_server.py").path
        stderrPath = FileManager.default.temporaryDirectory.appendingPathComponent("interop-\(UUID().uuidString).stderr").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [
            script, "--middleware", middleware.rawValue, "--rate", "\(rate)", "--fault", fault, "--apply-seconds",
            "\(applySeconds)", "--drop-after", "\(dropAfter)", "--seed", "\(seed)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        process.environment = environment
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
        self.process = process
        self.input = stdin.fileHandleForWriting
        self.lines = LineQueue(reading: stdout.fileHandleForReading.fileDescriptor)
        guard let line = await lines.next(), let ready = Self.object(line), ready["event"] as? String == "ready",
            let app = ready["app"] as? Int, let proxy = ready["proxy"] as? Int
        else {
            process.terminate()
            throw Failure(description: "\(middleware) did not start: \(Self.tail(of: stderrPath))")
        }
        self.app = app
        self.proxy = proxy
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(atPath: stderrPath)
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(proxy)")! }

    /// What the server applied, and the proxy's faults, so far.
    func report() async throws -> Report {
        try send("report")
        guard let line = await lines.next(), let object = Self.object(line), object["event"] as? String == "report",
            let applied = object["applied"] as? [String: [String]], let proxy = object["proxy"] as? [String: Any]
        else { throw Failure(description: "no report: \(Self.tail(of: stderrPath))") }
        return Report(
            applied: applied, requests: proxy["requests"] as? Int ?? 0, faults: proxy["faults"] as? [String: Int] ?? [:],
            faultedKeys: Set(proxy["faulted_keys"] as? [String] ?? []), replayedAnswers: proxy["replayed_answers"] as? Int ?? -1,
            unnoticeableCuts: proxy["unnoticeable_cuts"] as? Int ?? -1)
    }

    /// Stops the server and the proxy and waits for the process to end.
    func stop() async {
        try? send("quit")
        try? input.close()
        // Its output ends when it exits (it starts no processes of its own).
        await lines.waitForEnd()
    }

    private func send(_ command: String) throws {
        try input.write(contentsOf: Data((command + "\n").utf8))
    }

    private static func object(_ line: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    private static func tail(of path: String) -> String {
        let text = String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
        return String(text.suffix(2000))
    }
}

/// Lines read from a file descriptor by a thread of their own (a blocking
/// read never runs on the cooperative pool), handed to awaiting tasks.
final class LineQueue: Sendable {
    private struct State {
        var lines: [String] = []
        var ended = false
        var waiters: [CheckedContinuation<String?, Never>] = []
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    init(reading fd: Int32) {
        let thread = Thread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[0..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    deliver(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            end()
        }
        thread.name = "interop-stdout"
        thread.start()
    }

    /// The next line, or `nil` once the output ended.
    func next() async -> String? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> String?? in
                if !state.lines.isEmpty { return .some(state.lines.removeFirst()) }
                if state.ended { return .some(nil) }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func waitForEnd() async {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> Bool in
                if !state.ended { state.endWaiters.append(continuation) }
                return state.ended
            }
            if ended { continuation.resume() }
        }
    }

    private func deliver(_ line: String) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            if state.waiters.isEmpty {
                state.lines.append(line)
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume(returning: line)
    }

    private func end() {
        let (waiters, endWaiters) = state.withLock { state in
            state.ended = true
            defer {
                state.waiters = []
                state.endWaiters = []
            }
            return (state.waiters, state.endWaiters)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        for waiter in endWaiters { waiter.resume() }
    }
}
