import Foundation
import OutboxLocking

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process whose standard output is a pipe to this process, read
/// line by line; its standard error goes to a file (for the report when it
/// misbehaves).
///
/// Every method blocks: call them from a dedicated thread (see
/// ``ChildSupervisor``), never from Swift's cooperative pool.
final class ChildProcess {
    /// How the child ended.
    enum Termination: Sendable, Hashable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signaled(let signal): "killed by signal \(signal)\(signal == SIGKILL ? " (SIGKILL)" : "")"
            }
        }
    }

    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }

    let pid: pid_t
    /// The read end of the child's standard output (owned by this object
    /// until ``finish()``). Only the supervising thread touches it.
    private var output: Int32
    private var buffered: [UInt8] = []

    private init(pid: pid_t, output: Int32) {
        self.pid = pid
        self.output = output
    }

    /// Starts `executable` with `arguments`; its standard error is appended
    /// to `errorFile`.
    static func spawn(_ executable: String, _ arguments: [String], errorFile: String) throws -> ChildProcess {
        // Only one spawn at a time in this process, and close-on-exec on both
        // ends before the next: no other child spawned meanwhile (another
        // test, another mode) may inherit a write end, or this pipe would
        // never reach end-of-file after its child dies. (Glibc's `pipe2` is
        // not visible to Swift; Foundation's `Process` closes every
        // descriptor in its children anyway.)
        try spawnLock.withLock { _ throws -> ChildProcess in try spawnLocked(executable, arguments, errorFile: errorFile) }
    }

    private static let spawnLock = Locked(())

    private static func spawnLocked(_ executable: String, _ arguments: [String], errorFile: String) throws -> ChildProcess {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let errorFD = open(errorFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard errorFD >= 0 else {
            close(ends[0])
            close(ends[1])
            throw SpawnError(description: "cannot open \(errorFile): \(String(cString: strerror(errno)))")
        }
        defer {
            close(ends[1])
            close(errorFD)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears O_CLOEXEC on the target: only fds 0–2 reach the child.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorFD, 2)

        let argv = ([executable] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") }
        defer { environment.forEach { free($0) } }
        var pid: pid_t = 0
        let status = (argv + [nil]).withUnsafeBufferPointer { argvPointer in
            (environment + [nil]).withUnsafeBufferPointer { envPointer in
                posix_spawn(
                    &pid, executable, &actions, nil, UnsafeMutablePointer(mutating: argvPointer.baseAddress!),
                    UnsafeMutablePointer(mutating: envPointer.baseAddress!))
            }
        }
        guard status == 0 else {
            close(ends[0])
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        return ChildProcess(pid: pid, output: ends[0])
    }

    /// Sends SIGKILL (harmless if the child already exited but was not yet
    /// reaped: its pid cannot be reused before ``wait()``).
    func kill() {
        #if canImport(Glibc)
        _ = Glibc.kill(pid, SIGKILL)
        #else
        _ = Darwin.kill(pid, SIGKILL)
        #endif
    }

    /// What reading one line produced.
    enum Read {
        case line(String)
        /// Nothing arrived before the timeout.
        case timeout
        /// The child closed its output (it exited or was killed).
        case end
    }

    /// The next line, waiting at most `timeout` milliseconds (`-1`: forever).
    func readLine(timeout milliseconds: Int32) -> Read {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return .line(line)
            }
            guard output >= 0 else { return .end }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return .end
            }
            if ready == 0 { return .timeout }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                close(output)
                output = -1
                // A last line without its line break still counts.
                if !buffered.isEmpty {
                    let line = String(decoding: buffered, as: UTF8.self)
                    buffered = []
                    return .line(line)
                }
                return .end
            }
            buffered += chunk[..<count]
        }
    }

    /// Waits for the child to end and reaps it.
    func wait() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .exited(-1) }
        }
        if output >= 0 {
            close(output)
            output = -1
        }
        // WIFEXITED/WEXITSTATUS/WTERMSIG are C macros Swift cannot import.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }
}
