import CLITestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import OutboxLocking
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `outbox serve` keeps idempotency keys durably unless told otherwise.
@Suite("outbox serve", .serialized, .timeLimit(.minutes(5)))
struct ServeCommandTests {
    /// A running `outbox serve`, ended with SIGTERM.
    final class Serve: @unchecked Sendable {
        let process = Process()
        private let output = Locked<(text: String, ended: Bool, waiters: [CheckedContinuation<String?, Never>])>(("", false, []))
        private let exitState = Locked<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))
        /// `http://127.0.0.1:PORT`, from the "listening on" line.
        private(set) var baseURL = URL(string: "http://invalid")!
        /// Its reports, if it was built with a sanitizer.
        let sanitizerLogs: SanitizerLogs

        /// Starts `outbox serve --port 0 arguments…` in `directory`, with the
        /// open-file limit lowered to `descriptorLimit` if given (`ulimit -n`).
        init(_ arguments: [String], in directory: URL, descriptorLimit: Int? = nil) async throws {
            let executable = try #require(OutboxTool.executable, "build the outbox tool first: swift build --build-tests")
            let pipe = Pipe()
            sanitizerLogs = try SanitizerLogs(
                directory: FileManager.default.temporaryDirectory.appendingPathComponent("outbox-serve-sanitizer-\(UUID().uuidString)"))
            process.environment = sanitizerLogs.environment
            if let descriptorLimit {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", executable.path, "serve", "--port", "0"] + arguments
            } else {
                process.executableURL = executable
                process.arguments = ["serve", "--port", "0"] + arguments
            }
            process.currentDirectoryURL = directory
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            pipe.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                let ready = output.withLock { state -> ([CheckedContinuation<String?, Never>], String?) in
                    if data.isEmpty { state.ended = true } else { state.text += String(decoding: data, as: UTF8.self) }
                    guard let line = Self.listeningLine(state.text) ?? (state.ended ? "" : nil) else { return ([], nil) }
                    defer { state.waiters = [] }
                    return (state.waiters, line.isEmpty ? nil : line)
                }
                for waiter in ready.0 { waiter.resume(returning: ready.1) }
                if data.isEmpty { handle.readabilityHandler = nil }
            }
            process.terminationHandler = { [self] process in
                let waiters = exitState.withLock { state in
                    state.status = process.terminationStatus
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume(returning: process.terminationStatus) }
            }
            try process.run()
            let line = await withCheckedContinuation { continuation in
                let found = output.withLock { state -> String?? in
                    if let line = Self.listeningLine(state.text) { return .some(line) }
                    if state.ended { return .some(nil) }
                    state.waiters.append(continuation)
                    return nil
                }
                if let found { continuation.resume(returning: found) }
            }
            let text = try #require(line, "outbox serve ended without listening: \(output.withLock { $0.text })")
            let address = try #require(text.dropFirst("listening on ".count).split(separator: " ").first)
            baseURL = try #require(URL(string: String(address)))
        }

        static func listeningLine(_ text: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix("listening on ") }.map(String.init)
        }

        var listeningText: String { output.withLock { $0.text } }

        /// Sends SIGTERM and waits for the exit; a sanitizer's report is a failure.
        func stop() async { await end(with: SIGTERM) }

        /// Sends SIGKILL (`kill -9`: nothing is closed or flushed) and waits
        /// for the exit.
        func kill() async { await end(with: SIGKILL) }

        private func end(with signal: Int32) async {
            #if canImport(Glibc)
            _ = Glibc.kill(process.processIdentifier, signal)
            #else
            _ = Darwin.kill(process.processIdentifier, signal)
            #endif
            _ = await withCheckedContinuation { continuation in
                let status = exitState.withLock { state -> Int32? in
                    if let status = state.status { return status }
                    state.waiters.append(continuation)
                    return nil
                }
                if let status { continuation.resume(returning: status) }
            }
            if let report = sanitizerLogs.report() { Issue.record("\(report)") }
            try? FileManager.default.removeItem(at: sanitizerLogs.directory)
        }

        /// The port from the "listening on" line.
        var port: Int { baseURL.port ?? 0 }

        func post(key: String) async throws -> (Int, String, String?) {
            var request = URLRequest(url: baseURL.appendingPathComponent("messages"))
            request.httpMethod = "POST"
            request.httpBody = Data(#"{"conversation":"c","text":"hi"}"#.utf8)
            request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            return (http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Idempotent-Replayed"))
        }
    }

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("by default keys live in ./outbox-serve-keys and a retry after a restart is replayed")
    func durableByDefault() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await Serve([], in: directory)
        #expect(first.listeningText.contains("idempotency keys in "))
        #expect(first.listeningText.contains("outbox-serve-keys"))
        let applied = try await first.post(key: "serve-key-1")
        #expect(applied.0 == 201)
        await first.stop()
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("outbox-serve-keys").path, isDirectory: &isDirectory))

        let second = try await Serve([], in: directory)
        let replayed = try await second.post(key: "serve-key-1")
        #expect(replayed.0 == 201)
        #expect(replayed.1 == applied.1)
        #expect(replayed.2 == "true")
        await second.stop()
    }

    @Test("killed with SIGKILL right after answering, the server replays the answer after a restart: it was durable before it was sent")
    func responseSurvivesKill() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await Serve(["--keys-dir", "keys"], in: directory)
        var applied: [String: String] = [:]
        for index in 0..<20 {
            let answer = try await first.post(key: "kill-key-\(index)")
            #expect(answer.0 == 201)
            applied["kill-key-\(index)"] = answer.1
        }
        await first.kill()

        let second = try await Serve(["--keys-dir", "keys"], in: directory)
        for (key, body) in applied {
            let replayed = try await second.post(key: key)
            #expect(replayed.0 == 201 && replayed.1 == body && replayed.2 == "true", "\(key): \(replayed)")
        }
        await second.stop()
    }

    @Test("--keys-dir names the directory")
    func keysDirectory() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = directory.appendingPathComponent("elsewhere").path
        let first = try await Serve(["--keys-dir", keys], in: directory)
        _ = try await first.post(key: "serve-key-2")
        await first.stop()
        #expect(FileManager.default.fileExists(atPath: keys))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("outbox-serve-keys").path))
        let second = try await Serve(["--keys-dir", keys], in: directory)
        #expect(try await second.post(key: "serve-key-2").2 == "true")
        await second.stop()
    }

    @Test("--in-memory-keys forgets keys on exit and writes nothing")
    func inMemory() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await Serve(["--in-memory-keys"], in: directory)
        #expect(first.listeningText.contains("in memory"))
        #expect(try await first.post(key: "serve-key-3").0 == 201)
        await first.stop()
        let second = try await Serve(["--in-memory-keys"], in: directory)
        let again = try await second.post(key: "serve-key-3")
        #expect(again.0 == 201)
        #expect(again.2 == nil)
        await second.stop()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("--keys-dir and --in-memory-keys together are a usage error")
    func exclusive() async throws {
        let run = try await OutboxTool.run(["serve", "--in-memory-keys", "--keys-dir", "/tmp/x"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("exclude each other"))
    }

    @Test("a duration too large to keep, or a negative body rate, is a usage error, never a crash")
    func hugeDurations() async throws {
        for arguments in [["--idle-timeout", "1e300"], ["--body-timeout", "1e300"], ["--header-timeout", "1e20d"], ["--min-body-rate=-1"]] {
            let run = try await OutboxTool.run(["serve", "--in-memory-keys"] + arguments)
            #expect(run.status == 64, "\(arguments): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(arguments[0].prefix { $0 != "=" }), "\(arguments): \(run.stderr)")
        }
    }

    @Test("with the open-file limit filled by idle clients, a new request is answered once the idle timeout frees a slot")
    func descriptorLimit() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await Serve(["--in-memory-keys", "--idle-timeout", "1s"], in: directory, descriptorLimit: 128)
        // More idle clients than descriptors: past the cap (128 − 64) they
        // wait in the listen backlog instead of making accept fail.
        var idle: [RawConnection] = []
        for _ in 0..<150 { idle.append(try await RawConnection.connect(port: serve.port)) }
        let answered = try await serve.post(key: "through-the-crowd")
        #expect(answered.0 == 201)
        for connection in idle { connection.close() }
        #expect(serve.process.isRunning)
        await serve.stop()
    }
}
