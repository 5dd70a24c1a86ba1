import Foundation
import OutboxLocking

/// A command run under a pseudo-terminal of its own (util-linux's
/// `script -q -f -c COMMAND /dev/null`): what it draws is collected as it
/// comes, keys are typed into it, and its exit is awaited — for tests of
/// what a program does on a real terminal.
final class PseudoTerminal: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    /// What it drew so far, and the tests waiting for a text in it.
    private let collected = Locked<(data: Data, waiters: [UUID: (text: String, continuation: CheckedContinuation<Bool, Never>)])>(
        (Data(), [:]))
    private let ended = Locked<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    struct NotShown: Error, CustomStringConvertible {
        var awaited: String
        var output: String
        var description: String { "the terminal never showed \"\(awaited)\"; it showed:\n\(output.suffix(4000))" }
    }

    init(command: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-q", "-f", "-e", "-c", command, "/dev/null"]
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "xterm-256color"
        process.environment = environment
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        output.fileHandleForReading.readabilityHandler = { [collected] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            // Each waiter whose text has now been drawn is woken; at the end of the output, every waiter is.
            let woken = collected.withLock { state -> [(CheckedContinuation<Bool, Never>, Bool)] in
                state.data.append(data)
                let text = String(decoding: state.data, as: UTF8.self)
                let done = state.waiters.filter { data.isEmpty || text.contains($0.value.text) }
                for id in done.keys { state.waiters[id] = nil }
                return done.values.map { ($0.continuation, text.contains($0.text)) }
            }
            for (continuation, shown) in woken { continuation.resume(returning: shown) }
        }
        process.terminationHandler = { [ended] process in
            let waiters = ended.withLock { state -> [CheckedContinuation<Int32, Never>] in
                state.status = process.terminationStatus
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: process.terminationStatus) }
        }
        try process.run()
    }

    /// Everything drawn so far, escape sequences included.
    var output: String { String(decoding: collected.withLock { $0.data }, as: UTF8.self) }

    /// Waits until the output contains `text` — woken as the output comes,
    /// with `limit` only as a guard against a program that never draws it —
    /// and returns the output.
    func waitFor(_ text: String, limit: Duration = .seconds(90)) async throws -> String {
        let id = UUID()
        let guardTask = Task { [collected] in
            try? await Task.sleep(for: limit)
            collected.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
        let shown = await withCheckedContinuation { continuation in
            let already = collected.withLock { state -> Bool in
                if String(decoding: state.data, as: UTF8.self).contains(text) { return true }
                state.waiters[id] = (text, continuation)
                return false
            }
            if already { continuation.resume(returning: true) }
        }
        guardTask.cancel()
        guard shown else { throw NotShown(awaited: text, output: output) }
        return output
    }

    /// Types `keys` into the terminal.
    func type(_ keys: String) { input.fileHandleForWriting.write(Data(keys.utf8)) }

    /// Waits for the command to end; its exit status.
    func exitStatus() async throws -> Int32 {
        await withCheckedContinuation { continuation in
            let status = ended.withLock { state -> Int32? in
                if state.status == nil { state.waiters.append(continuation) }
                return state.status
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    /// Ends the command if it still runs.
    func kill() {
        if process.isRunning { process.terminate() }
    }
}
