import Foundation
import OutboxBenchSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the parent saw of one life of a crash worker, in monotonic
/// nanoseconds from its spawn.
struct WorkerLife: Sendable {
    var opened: UInt64?
    var firstAcknowledged: UInt64?
    var firstDelivered: UInt64?
    /// When the parent sent SIGKILL (nil: the worker ended by itself).
    var killed: UInt64?
    var acknowledged = 0
    var delivered = 0
}

/// Every `A` and `D` line of a run, across all the worker's lives.
struct CrashLedger: Sendable {
    /// Acknowledged entry id → its idempotency key.
    var acknowledged: [String: String] = [:]
    /// Entries whose delivery was confirmed.
    var delivered: Set<String> = []
    /// `D` lines for an entry already confirmed (a success recorded twice).
    var deliveredTwice = 0
}

/// The ledger of a run, shared by the threads that run its lives one after
/// another (a class: a million acknowledged ids are not copied per life).
final class CrashLedgerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var ledger = CrashLedger()

    func update<Result>(_ body: (inout CrashLedger) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&ledger)
    }

    var snapshot: CrashLedger { update { $0 } }
}

/// When the parent kills a worker.
enum KillRule: Sendable {
    /// At this many seconds after the spawn.
    case at(Double)
    /// This many seconds after the first acknowledged enqueue (and the first
    /// delivery, if `waitForDelivery`); killed at `timeout` if they never come.
    case afterFirst(delay: Double, waitForDelivery: Bool, timeout: Double)
    /// Never: the worker runs to its end (within `timeout`, or it fails).
    case never(timeout: Double)
}

struct WorkerFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs the benchmark binary as a crash worker, reads its report lines as
/// they come, kills it by `rule` with SIGKILL and reaps it. Blocking: call it
/// on a thread of its own (`onDedicatedThread`), never on the cooperative pool.
func runWorkerLife(arguments: [String], kill rule: KillRule, into ledger: CrashLedgerBox) throws -> WorkerLife {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw WorkerFailure("pipe: errno \(errno)") }
    let (readEnd, writeEnd) = (fds[0], fds[1])
    defer { close(readEnd) }

    let start = monotonicNanoseconds()
    let pid: pid_t
    do {
        defer { close(writeEnd) }
        pid = try spawn([selfExecutable()] + arguments, stdout: writeEnd, closing: readEnd)
    }

    var life = WorkerLife()
    var clock = KillClock(rule: rule, start: start)
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var sentKill = false
    func sendKill() {
        guard !sentKill else { return }
        sentKill = true
        life.killed = monotonicNanoseconds() - start
        kill(pid, SIGKILL)
    }
    // Read until end of file: lines written before the kill are still in the
    // pipe after it, and every one of them counts.
    while true {
        let now = monotonicNanoseconds()
        if !sentKill, let killAt = clock.killAt, now >= killAt { sendKill() }
        if !sentKill, let giveUpAt = clock.giveUpAt, now >= giveUpAt {
            if case .never = rule {
                sendKill()
                throw WorkerFailure("the worker \(arguments) did not finish in time")
            }
            sendKill()
        }
        guard try waitForOutput(on: readEnd, milliseconds: clock.pollMilliseconds(now: now, killSent: sentKill)) else {
            continue
        }
        let count = read(readEnd, &buffer, buffer.count)
        if count < 0 {
            if errno == EINTR { continue }
            throw WorkerFailure("read: errno \(errno)")
        }
        if count == 0 { break }
        let at = monotonicNanoseconds() - start
        pending.append(contentsOf: buffer[0..<count])
        recordCompleteLines(&pending, at: at, life: &life, ledger: ledger)
        if !sentKill { clock.startCountdownIfDue(life: life) }
    }
    try reapWorker(pid, wasKilled: sentKill, rule: rule, arguments: arguments)
    return life
}

/// The moments a worker's life is cut short: `killAt`, when the rule kills it
/// (for `afterFirst`, set only once what it waits for has come), and
/// `giveUpAt`, its time limit.
private struct KillClock {
    let rule: KillRule
    var killAt: UInt64?
    var giveUpAt: UInt64?

    init(rule: KillRule, start: UInt64) {
        self.rule = rule
        switch rule {
        case .at(let delay): killAt = start + Self.nanoseconds(delay)
        case .afterFirst(_, _, let timeout): giveUpAt = start + Self.nanoseconds(timeout)
        case .never(let timeout): giveUpAt = start + Self.nanoseconds(timeout)
        }
    }

    /// How long to wait for output: until the nearest moment (a millisecond
    /// past it), or a second once the kill is sent or when there is none.
    func pollMilliseconds(now: UInt64, killSent: Bool) -> Int32 {
        let deadline = [killAt, giveUpAt].compactMap { $0 }.min()
        return killSent ? 1_000 : deadline.map { Int32(clamping: ($0 > now ? $0 - now : 0) / 1_000_000 + 1) } ?? 1_000
    }

    /// For `afterFirst`: sets the kill `delay` from now once the life has
    /// acknowledged an entry (and, if it waits for one, delivered one).
    mutating func startCountdownIfDue(life: WorkerLife) {
        if killAt == nil, case .afterFirst(let delay, let waitForDelivery, _) = rule,
            life.firstAcknowledged != nil, !waitForDelivery || life.firstDelivered != nil
        {
            killAt = monotonicNanoseconds() + Self.nanoseconds(delay)
        }
    }

    private static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(max(0, seconds) * 1e9) }
}

/// Waits up to `milliseconds` for the worker's output: false when the time
/// runs out or a signal interrupts the wait.
private func waitForOutput(on readEnd: Int32, milliseconds: Int32) throws -> Bool {
    var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, milliseconds)
    if ready < 0 {
        if errno == EINTR { return false }
        throw WorkerFailure("poll: errno \(errno)")
    }
    return ready > 0
}

/// Records every complete line in `pending` and removes it, leaving a last
/// line without its newline for the next read to finish.
private func recordCompleteLines(
    _ pending: inout [UInt8], at: UInt64, life: inout WorkerLife, ledger: CrashLedgerBox
) {
    var lineStart = 0
    ledger.update { ledger in
        for index in 0..<pending.count where pending[index] == UInt8(ascii: "\n") {
            record(pending[lineStart..<index], at: at, life: &life, ledger: &ledger)
            lineStart = index + 1
        }
    }
    pending.removeFirst(lineStart)
}

/// Waits for the worker to end and checks how it ended: a killed worker by
/// the SIGKILL (or a clean exit just before it), any other only a `never`
/// one, by a clean exit.
private func reapWorker(_ pid: pid_t, wasKilled sentKill: Bool, rule: KillRule, arguments: [String]) throws {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signalled = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
    let signal = status & 0x7f
    let exitCode = (status >> 8) & 0xff
    if sentKill {
        // Killed: it must not have died of anything else first.
        guard signalled && signal == SIGKILL || !signalled && exitCode == 0 else {
            throw WorkerFailure("the worker \(arguments) ended with status \(status) before its kill")
        }
    } else {
        guard case .never = rule, !signalled, exitCode == 0 else {
            throw WorkerFailure("the worker \(arguments) ended by itself (exit \(exitCode), signal \(signalled ? signal : 0))")
        }
    }
}

private func record(_ line: ArraySlice<UInt8>, at: UInt64, life: inout WorkerLife, ledger: inout CrashLedger) {
    let fields = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
    switch fields.first {
    case "O":
        life.opened = life.opened ?? at
    case "A" where fields.count == 3:
        life.firstAcknowledged = life.firstAcknowledged ?? at
        life.acknowledged += 1
        ledger.acknowledged[fields[1]] = fields[2]
    case "D" where fields.count == 2:
        life.firstDelivered = life.firstDelivered ?? at
        life.delivered += 1
        if !ledger.delivered.insert(fields[1]).inserted { ledger.deliveredTwice += 1 }
    default:
        FileHandle.standardError.write(Data("outbox-compare: unexpected worker line: \(String(decoding: line, as: UTF8.self))\n".utf8))
    }
}

/// The running binary, to start again as a worker.
private func selfExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if count > 0 { return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    guard let path = Bundle.main.executablePath else { throw WorkerFailure("cannot find the benchmark binary") }
    return path
}

/// `posix_spawn` with `stdout` as the child's standard output and
/// `/dev/null` as its standard input; standard error is shared.
private func spawn(_ arguments: [String], stdout: Int32, closing other: Int32) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, stdout, 1)
    posix_spawn_file_actions_addclose(&actions, stdout)
    posix_spawn_file_actions_addclose(&actions, other)
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, argv[0]!, &actions, nil, argv, environ)
    guard result == 0 else { throw WorkerFailure("posix_spawn \(arguments[0]): error \(result)") }
    return pid
}

/// A seeded generator (SplitMix64), so a run's kill moments can be replayed.
struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
