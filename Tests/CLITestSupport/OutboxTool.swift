import Foundation

/// Runs the built `outbox` executable as a real child process, for the
/// command-line tests of every test target.
public enum OutboxTool {
    /// What one run of the tool did.
    public struct Run: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
        /// The run was still going at its time limit, and the test ended it
        /// (SIGKILL): see ``OutboxTool/run(_:currentDirectory:stopAfter:)``.
        public var stopped = false

        public var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
        public var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    }

    public struct NotBuilt: Error, CustomStringConvertible {
        public var description: String {
            "the outbox executable was not found next to the test bundle: build with `swift build --build-tests`"
        }
    }

    public struct KilledBySignal: Error, CustomStringConvertible {
        public var signal: Int32
        /// What the process wrote to stderr before it died (a trap's message says where).
        public var stderr: String = ""
        public var description: String { "killed by signal \(signal); stderr: \(Self.excerpt(stderr))" }

        /// Swift's backtracer prints the trap's message and the crashed
        /// thread first, then every other thread and the registers: the
        /// start of the report says where, so it is kept whole, with the
        /// last lines before it and the end of the output.
        static func excerpt(_ text: String) -> String {
            guard let crash = text.range(of: "💣") ?? text.range(of: "Fatal error") ?? text.range(of: "Crash") else {
                return String(text.suffix(4000))
            }
            let before = text[..<crash.lowerBound].suffix(1000)
            let report = text[crash.lowerBound...].prefix(6000)
            let rest = text[crash.lowerBound...].dropFirst(6000)
            return before + report + (rest.isEmpty ? "" : "\n…\n" + rest.suffix(1000))
        }
    }

    /// The built `outbox` executable: in the products directory, the one
    /// that holds the test bundle (`$OUTBOX_CLI` overrides it).
    public static let executable: URL? = {
        if let override = ProcessInfo.processInfo.environment["OUTBOX_CLI"] { return URL(fileURLWithPath: override) }
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        folders.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            folders.append(bundle.bundleURL.deletingLastPathComponent())
        }
        folders.append(Bundle.main.bundleURL)
        return folders.map { $0.appendingPathComponent("outbox") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Runs the tool and waits for it without blocking a thread
    /// (``ChildProcess``: its output goes to files). `currentDirectory` is the child's working directory (default: ours).
    ///
    /// Throws ``SanitizerReport`` if the tool (or a process it started) was
    /// built with a sanitizer and reported anything: the report is the
    /// test's failure message, whatever the exit status.
    ///
    /// With `stopAfter`, a run still going after that long is ended with
    /// SIGKILL and returned with ``Run/stopped`` set (its status is then
    /// meaningless): for commands that serve or work until stopped, where a
    /// test only needs to know they neither failed nor crashed at the start.
    /// Any other signal is still ``KilledBySignal``; Swift's crash backtracer
    /// is off in this mode, so a trap's stderr has its message but no trace.
    /// `input` is the child's standard input (default: empty).
    public static func run(
        _ arguments: [String], currentDirectory: String? = nil, stopAfter: Duration? = nil, input: Data? = nil
    ) async throws -> Run {
        guard let executable else { throw NotBuilt() }
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-cli-sanitizer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: logs) }
        let sanitizerLogs = try SanitizerLogs(directory: logs)
        var environment = sanitizerLogs.environment
        if stopAfter != nil {
            // A trap must end the child at once: Swift's backtracer takes
            // seconds (a crash the time limit would take for a run still
            // going), and killed mid-backtrace it is left holding the child's
            // descriptors, so Foundation never reports the child's end.
            environment["SWIFT_BACKTRACE"] = "enable=no"
        }
        let ended = try await ChildProcess.run(
            executable: executable, arguments: arguments, environment: environment, currentDirectory: currentDirectory,
            stopAfter: stopAfter, input: input)
        if let report = sanitizerLogs.report() { throw report }
        if ended.reason == .uncaughtSignal && !ended.stopped {
            throw KilledBySignal(signal: ended.status, stderr: ended.stderr)
        }
        return Run(status: ended.status, stdout: ended.stdout, stderr: ended.stderr, stopped: ended.stopped)
    }

    /// Parses one line of JSON output as an object.
    public static func jsonObject(_ line: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }
}
