import OutboxLogTesting
import OutboxLocking

/// When the kill loop SIGKILLs its worker in one cycle, and how the parent
/// checks the result. Drawn from the seed and the cycle number; the kill
/// *moment* also depends on real timing, which is the point.
struct KillPlan: Sendable, CustomStringConvertible {
    enum Moment: Sendable, Hashable {
        /// Let the worker finish and close the log.
        case never
        /// This many microseconds after the start: often during the open
        /// (recovery, or repairs the last check left to it).
        case afterStart(microseconds: UInt32)
        /// This long after the log is open.
        case afterReady(microseconds: UInt32)
        /// Right after (plus a little) the acknowledgement of step `step`.
        case afterAck(step: Int, microseconds: UInt32)
        /// After the `n`th compaction or sync starts (0-based), plus a little:
        /// mid-compaction, mid-roll, mid-sync.
        case duringStep(n: Int, microseconds: UInt32)
    }

    var moment: Moment
    /// Steps in the workload.
    var count: Int
    /// The parent checks the crashed log read-only, so the next worker's
    /// open does the repairs (and may itself be killed doing them).
    var readOnlyCheck: Bool

    static func draw(seed: UInt64, cycle: Int) -> KillPlan {
        var random = SplitMix64.derived(seed: seed, stream: 0x4B49_4C4C_0000_0000 | UInt64(cycle))
        let count = 100 + random.next(below: 400)
        let readOnlyCheck = random.next(below: 3) == 0
        let roll = random.next(below: 100)
        let moment: Moment
        switch roll {
        case 0..<4: moment = .never
        case 4..<14: moment = .afterStart(microseconds: UInt32(random.next(below: 60_000)))
        case 14..<30: moment = .afterReady(microseconds: UInt32(random.next(below: 40_000)))
        case 30..<70: moment = .afterAck(step: random.next(below: count), microseconds: UInt32(random.next(below: 400)))
        default: moment = .duringStep(n: random.next(below: 12), microseconds: UInt32(random.next(below: 3_000)))
        }
        return KillPlan(moment: moment, count: moment == .never ? min(count, 150) : count, readOnlyCheck: readOnlyCheck)
    }

    /// The supervisor's policy for this plan.
    var policy: ChildSupervisor.KillPolicy {
        var policy = ChildSupervisor.KillPolicy()
        policy.hangLimit = .seconds(60)  // a worker's whole workload takes a few seconds at most
        switch moment {
        case .never:
            break
        case .afterStart(let microseconds):
            policy.after = .microseconds(microseconds)
        case .afterReady(let microseconds):
            policy.onLine = { line, _ in line == "ready" ? max(1, microseconds) : nil }
        case .afterAck(let step, let microseconds):
            let target = "ack \(step)"
            policy.onLine = { line, _ in line == target ? microseconds : nil }
        case .duringStep(let n, let microseconds):
            let seen = Counter()
            policy.onLine = { line, _ in
                guard line.hasPrefix("begin ") else { return nil }
                return seen.next() == n ? microseconds : nil
            }
        }
        return policy
    }

    var description: String {
        let when: String
        switch moment {
        case .never: when = "no kill"
        case .afterStart(let us): when = "kill \(us) µs after start"
        case .afterReady(let us): when = "kill \(us) µs after ready"
        case .afterAck(let step, let us): when = "kill \(us) µs after ack \(step)"
        case .duringStep(let n, let us): when = "kill \(us) µs into compaction/sync #\(n)"
        }
        return "\(count) steps, \(when)\(readOnlyCheck ? ", read-only check" : "")"
    }
}

/// A counter a `Sendable` closure can bump.
final class Counter: Sendable {
    private let value = Locked(0)

    /// Returns the current count and adds one.
    func next() -> Int {
        value.withLock { value in
            defer { value += 1 }
            return value
        }
    }
}
