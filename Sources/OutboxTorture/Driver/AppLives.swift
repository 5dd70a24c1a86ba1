import Foundation

/// The kill-and-restart loop of an app child process (the outbox and
/// payload modes): the app runs life after life, each maybe killed, until
/// it prints that its queue is drained.
struct AppLives {
    let executable: String
    let errorFile: String
    /// The most lives the app may take to drain its queue.
    let limit: Int
    private(set) var lives = 0
    private(set) var drained = false

    /// How a life may end.
    enum Ending {
        case killed
        case drained
    }

    init(executable: String, errorFile: String, limit: Int) {
        self.executable = executable
        self.errorFile = errorFile
        self.limit = limit
    }

    /// Runs one more life under `policy` (`plan` names it in a violation).
    /// Every line but `ready` and `drained` goes to `accept`, which throws
    /// what is wrong with it or returns `false` for a line with no business
    /// there. Returns the outcome, for the mode to judge how the life ended.
    mutating func live(
        _ arguments: [String], policy: ChildSupervisor.KillPolicy, plan: String,
        accept: (WorkerLine, String) throws(CycleViolation) -> Bool
    ) async throws(CycleViolation) -> ChildSupervisor.Outcome {
        let outcome: ChildSupervisor.Outcome
        do {
            outcome = try await ChildSupervisor.run(executable, arguments, errorFile: errorFile, policy: policy)
        } catch {
            throw CycleViolation("cannot run the app: \(error)")
        }
        lives += 1
        for line in outcome.lines {
            let parsed = WorkerLine(parsing: line)
            switch parsed {
            case .ready: break
            case .drained: drained = true
            default:
                if try !accept(parsed, line) {
                    throw CycleViolation("life \(lives) (\(plan)): the app printed \"\(line)\"; stderr: \(outcome.errorTail)")
                }
            }
        }
        return outcome
    }

    /// How `outcome`'s life ended, if as a life may: killed with SIGKILL
    /// (by the supervisor, if `bySupervisor`), or exited 0 once drained.
    func ending(of outcome: ChildSupervisor.Outcome, bySupervisor: Bool) -> Ending? {
        switch outcome.termination {
        case .signaled(let signal) where signal == SIGKILL && (outcome.killed || !bySupervisor): .killed
        case .exited(0) where drained: .drained
        default: nil
        }
    }

    /// A violation once the app has taken more than its lives.
    func checkLimit() throws(CycleViolation) {
        if lives > limit { throw CycleViolation("the app was not drained after \(lives) lives") }
    }
}
