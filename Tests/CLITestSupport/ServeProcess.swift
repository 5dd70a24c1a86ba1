import Foundation
import OutboxLocking

/// A running `outbox` child process: `outbox serve` for tests of several
/// servers (ready once it prints its "listening on" line), or any command
/// whose output a test follows as it comes (``waitForOutput(where:)``); ended with
/// a signal.
public final class ServeProcess: @unchecked Sendable {
    public let process = Process()
    /// `http://127.0.0.1:PORT`, from the "listening on" line.
    public private(set) var baseURL = URL(string: "http://invalid")!
    /// Its sanitizer reports, if it was built with a sanitizer.
    public let sanitizerLogs: SanitizerLogs
    /// A caller waiting until the output so far gives `answer` one.
    private struct OutputWaiter {
        var answer: @Sendable (String) -> String?
        var continuation: CheckedContinuation<String?, Never>
    }
    private let output = Locked<(text: String, ended: Bool, waiters: [OutputWaiter])>(("", false, []))
    private let exit = Locked<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    public struct DidNotListen: Error, CustomStringConvertible {
        public var output: String
        public var description: String { "the server ended without listening: \(output)" }
    }

    /// Starts `outbox serve --port 0 arguments…` and returns once it listens.
    public convenience init(_ arguments: [String]) async throws {
        try await self.init(launching: ["serve", "--port", "0", "--debug-exit-with-parent"] + arguments, addressLine: "listening on ")
    }

    /// Starts `outbox arguments…` (a command that serves HTTP until
    /// stopped) and returns once it printed the line starting with
    /// `addressLine` that holds its `http://` address.
    public convenience init(launching arguments: [String], addressLine: String) async throws {
        try self.init(following: arguments)
        let line = await firstLine(startingWith: addressLine)
        guard let line, let address = line.split(separator: " ").first(where: { $0.hasPrefix("http://") }),
            let url = URL(string: String(address))
        else {
            process.terminate()
            throw DidNotListen(output: output.withLock { $0.text })
        }
        baseURL = url
    }

    /// Starts `outbox arguments…` and returns at once, for a test that
    /// follows what it prints (``waitForOutput(where:)``).
    public init(following arguments: [String]) throws {
        guard let executable = OutboxTool.executable else { throw OutboxTool.NotBuilt() }
        sanitizerLogs = try SanitizerLogs(
            directory: FileManager.default.temporaryDirectory.appendingPathComponent("outbox-serve-sanitizer-\(UUID().uuidString)"))
        let pipe = Pipe()
        process.executableURL = executable
        // --debug-exit-with-parent: it ends with the test process, whatever happens to that.
        process.arguments = arguments
        process.environment = sanitizerLogs.environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            let answered = output.withLock { state -> [(CheckedContinuation<String?, Never>, String?)] in
                if data.isEmpty { state.ended = true } else { state.text += String(decoding: data, as: UTF8.self) }
                var answered: [(CheckedContinuation<String?, Never>, String?)] = []
                state.waiters.removeAll { waiter in
                    let answer = waiter.answer(state.text)
                    guard answer != nil || state.ended else { return false }
                    answered.append((waiter.continuation, answer))
                    return true
                }
                return answered
            }
            for (continuation, line) in answered { continuation.resume(returning: line) }
            if data.isEmpty { handle.readabilityHandler = nil }
        }
        process.terminationHandler = { [exit] process in
            let waiters = exit.withLock { state in
                state.status = process.terminationStatus
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: process.terminationStatus) }
        }
        try process.run()
    }

    /// A test that failed before stopping it does not leave it running.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    static func line(startingWith prefix: String, in text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
    }

    /// The first line it printed that starts with `prefix`, once it is
    /// printed; `nil` if its output ends without one.
    public func firstLine(startingWith prefix: String) async -> String? {
        await waitForOutput { Self.line(startingWith: prefix, in: $0) }
    }

    /// What `answer` gives for its output so far, once it gives something
    /// (it is asked again each time more is printed); `nil` if the output
    /// ends first. Nothing polls: each read of its output wakes the waiters.
    public func waitForOutput(where answer: @escaping @Sendable (String) -> String?) async -> String? {
        await withCheckedContinuation { continuation in
            let found = output.withLock { state -> String?? in
                if let found = answer(state.text) { return .some(found) }
                if state.ended { return .some(nil) }
                state.waiters.append(OutputWaiter(answer: answer, continuation: continuation))
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// Everything it printed so far.
    public var printed: String { output.withLock { $0.text } }

    /// Sends `signal` (SIGTERM by default; SIGKILL to kill it mid-request)
    /// and waits for it to end; returns its exit status or signal.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) async -> Int32 {
        kill(process.processIdentifier, signal)
        let status = await withCheckedContinuation { continuation in
            let status = exit.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let status { continuation.resume(returning: status) }
        }
        return status
    }
}
