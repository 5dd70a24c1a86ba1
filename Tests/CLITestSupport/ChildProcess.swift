import Foundation

/// Runs a child process to its end without blocking a thread: the one
/// runner behind ``OutboxTool`` and the test targets' setup scripts
/// (PostgreSQL's start.sh, the interop venv's setup-venv.sh).
///
/// Its output goes to files, never pipes, so a large output cannot fill a
/// pipe and stall it, and a process it leaves running (a server) holds
/// nothing the test waits on.
public enum ChildProcess {
    /// How one run ended.
    public struct Ended: Sendable {
        /// The exit status, or the signal number when ``reason`` is
        /// `.uncaughtSignal`.
        public var status: Int32
        public var reason: Process.TerminationReason
        /// The run was still going at its `stopAfter` limit and was ended
        /// with SIGKILL (its status is then meaningless).
        public var stopped: Bool
        /// Standard output; with `combinedOutput`, that file's contents.
        public var stdout: String
        /// Standard error; empty with `combinedOutput`.
        public var stderr: String
    }

    /// Runs `executable` with `arguments` and waits for it.
    ///
    /// - Parameters:
    ///   - environment: the child's environment (default: ours).
    ///   - currentDirectory: its working directory (default: ours).
    ///   - combinedOutput: a file that gets both output streams and is kept
    ///     (a setup log to read while it runs); without it, each stream goes
    ///     to a temporary file deleted once read.
    ///   - stopAfter: a run still going after that long is ended with
    ///     SIGKILL and returned with ``Ended/stopped`` set.
    ///   - input: the child's standard input, whole (default: empty).
    public static func run(
        executable: URL, arguments: [String], environment: [String: String]? = nil, currentDirectory: String? = nil,
        combinedOutput: URL? = nil, stopAfter: Duration? = nil, input: Data? = nil
    ) async throws -> Ended {
        let outputs = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-child-output-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outputs) }
        let stdoutURL = combinedOutput ?? outputs.appendingPathComponent("stdout")
        let stderrURL = outputs.appendingPathComponent("stderr")
        let stdout = try emptyFile(stdoutURL)
        defer { try? stdout.close() }
        let stderr = combinedOutput == nil ? try emptyFile(stderrURL) : nil
        defer { try? stderr?.close() }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        if let input {
            let inputURL = outputs.appendingPathComponent("stdin")
            try input.write(to: inputURL)
            process.standardInput = try FileHandle(forReadingFrom: inputURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = stdout
        process.standardError = stderr ?? stdout
        let stopper = stopAfter.map { limit in StopTimer(process: process, after: limit) }
        let (status, reason) = try await waitForExit(process) { stopper?.start() }
        let stopped = stopper?.finish() == true && reason == .uncaughtSignal && status == SIGKILL
        return Ended(
            status: status, reason: reason, stopped: stopped, stdout: contents(of: stdoutURL),
            stderr: combinedOutput == nil ? contents(of: stderrURL) : "")
    }

    /// Starts `process` (configured, not yet running) and waits for its end
    /// without blocking a thread; `started` runs once it is running.
    public static func waitForExit(
        _ process: Process, started: @Sendable () -> Void = {}
    ) async throws -> (status: Int32, reason: Process.TerminationReason) {
        try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(Int32, Process.TerminationReason), any Error>) in
            process.terminationHandler = { process in
                continuation.resume(returning: (process.terminationStatus, process.terminationReason))
            }
            do {
                try process.run()
                started()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
    }

    /// Creates (or empties) the file at `url` and opens it for writing.
    static func emptyFile(_ url: URL) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        return try FileHandle(forWritingTo: url)
    }

    static func contents(of url: URL) -> String {
        String(decoding: FileManager.default.contents(atPath: url.path) ?? Data(), as: UTF8.self)
    }
}
