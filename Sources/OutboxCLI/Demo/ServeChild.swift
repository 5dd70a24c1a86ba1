import Foundation
import OutboxLocking

/// An `outbox serve` child process of this executable, for the demo's
/// servers on PostgreSQL (and the server benchmark's).
final class ServeChild: Sendable {
    let process: Process
    /// `http://127.0.0.1:PORT`, from its "listening on" line.
    let baseURL: URL

    private init(process: Process, baseURL: URL) {
        self.process = process
        self.baseURL = baseURL
    }

    struct DidNotStart: Error, CustomStringConvertible {
        var output: String
        var description: String { "outbox serve did not start: \(output.isEmpty ? "(no output)" : output)" }
    }

    /// Starts `outbox serve arguments…` and returns once it listens.
    static func start(_ arguments: [String]) async throws -> ServeChild {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
            process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        }
        process.arguments = ["serve"] + arguments
        let pipe = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipe
        process.standardError = pipe
        let lines = Locked<(text: String, waiter: CheckedContinuation<String, Never>?, done: Bool)>(("", nil, false))
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            let (waiter, text) = lines.withLock { state -> (CheckedContinuation<String, Never>?, String) in
                if data.isEmpty { state.done = true } else { state.text += String(decoding: data, as: UTF8.self) }
                guard state.done || state.text.contains("\n"), !state.text.isEmpty || state.done else { return (nil, "") }
                defer { state.waiter = nil }
                return (state.waiter, state.text)
            }
            waiter?.resume(returning: text)
            if data.isEmpty { handle.readabilityHandler = nil }
        }
        try process.run()
        let first = await withCheckedContinuation { continuation in
            let ready = lines.withLock { state -> String? in
                if state.done || state.text.contains("\n") { return state.text }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        let line = first.split(separator: "\n").first.map(String.init) ?? ""
        guard line.hasPrefix("listening on "), let address = line.dropFirst("listening on ".count).split(separator: " ").first,
            let url = URL(string: String(address))
        else {
            process.terminate()
            throw DidNotStart(output: first.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // Keep draining its output so it never blocks on a full pipe.
        pipe.fileHandleForReading.readabilityHandler = { handle in
            if handle.availableData.isEmpty { handle.readabilityHandler = nil }
        }
        return ServeChild(process: process, baseURL: url)
    }

    /// SIGTERM, then waits for it to exit.
    func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    }
}
