import Foundation

/// Runs a child process from start to reaping on a thread of its own —
/// reading its pipe, deciding when to kill it, and `waitpid` all block —
/// and hands the outcome back to async code.
enum ChildSupervisor {
    /// When to send SIGKILL.
    struct KillPolicy: Sendable {
        /// Called for each line the child prints (with its 0-based number):
        /// return a delay in microseconds to kill after it, or `nil`.
        var onLine: @Sendable (_ line: String, _ number: Int) -> UInt32? = { _, _ in nil }
        /// Kill this long after the start, if still running.
        var after: Duration?
        /// Polled every few milliseconds: kill as soon as it returns `true`
        /// (a condition outside the child, such as a server's ledger).
        var when: (@Sendable () -> Bool)?
        /// A child still running after this long is killed and reported as
        /// hung: a safety net against a deadlock, not a measurement.
        var hangLimit: Duration = .seconds(120)

        /// Never kill (except a hung child).
        static let never = KillPolicy()
    }

    /// What happened to the child.
    struct Outcome: Sendable {
        var lines: [String]
        var termination: ChildProcess.Termination
        /// This supervisor sent the SIGKILL.
        var killed: Bool
        /// Killed for exceeding ``KillPolicy/hangLimit``.
        var hung: Bool
        /// The end of what the child wrote to standard error.
        var errorTail: String
    }

    static func run(
        _ executable: String, _ arguments: [String], errorFile: String, policy: KillPolicy
    ) async throws -> Outcome {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outcome, any Error>) in
            let thread = Thread {
                do {
                    continuation.resume(returning: try supervise(executable, arguments, errorFile: errorFile, policy: policy))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "outbox-torture-child"
            thread.start()
        }
    }

    /// The blocking part, on the supervisor's own thread.
    private static func supervise(
        _ executable: String, _ arguments: [String], errorFile: String, policy: KillPolicy
    ) throws -> Outcome {
        try? FileManager.default.removeItem(atPath: errorFile)
        let clock = ContinuousClock()
        let started = clock.now
        let child = try ChildProcess.spawn(executable, arguments, errorFile: errorFile)
        var lines: [String] = []
        var killed = false
        var hung = false
        func kill(after microseconds: UInt32 = 0) {
            if microseconds > 0 { usleep(microseconds) }
            child.kill()
            killed = true
        }
        reading: while true {
            // Wake up for whichever comes first: a line, the timed kill, a
            // poll of the outside condition, or the hang limit.
            var deadline = started + policy.hangLimit
            if !killed, let after = policy.after { deadline = min(deadline, started + after) }
            var timeout = max(0, (clock.now.duration(to: deadline)).milliseconds)
            if !killed && policy.when != nil { timeout = min(timeout, 2) }
            if killed { timeout = -1 }  // the child is dead: read to end-of-file
            switch child.readLine(timeout: Int32(clamping: timeout)) {
            case .line(let line):
                lines.append(line)
                if !killed, let delay = policy.onLine(line, lines.count - 1) { kill(after: delay) }
            case .end:
                break reading
            case .timeout:
                break
            }
            if !killed {
                let now = clock.now
                if now >= started + policy.hangLimit {
                    hung = true
                    dumpStacks(of: child.pid, to: errorFile + ".stacks")
                    kill()
                } else if let after = policy.after, now >= started + after {
                    kill()
                } else if let when = policy.when, when() {
                    kill()
                }
            }
        }
        let termination = child.wait()
        return Outcome(
            lines: lines, termination: termination, killed: killed, hung: hung, errorTail: tail(of: errorFile))
    }

    /// Where a hung child's threads were, if gdb is installed: written to
    /// `path` before the child is killed, for the report.
    static func dumpStacks(of pid: Int32, to path: String) {
        let gdb = "/usr/bin/gdb"
        guard FileManager.default.isExecutableFile(atPath: gdb) else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gdb)
        process.arguments = ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt 20"]
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let output = FileHandle(forWritingAtPath: path) else { return }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()  // on the supervisor's own thread
        } catch {}
        try? output.close()
    }

    /// The last lines of a file, for a report.
    static func tail(of path: String, bytes: Int = 2000) -> String {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return "" }
        return String(decoding: data.suffix(bytes), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
