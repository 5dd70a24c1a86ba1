import DequeModule
import Dispatch
import Foundation
import OutboxLocking

/// A few dedicated threads for blocking file I/O.
///
/// Reads, recovery and compaction call `pread`/`fsync`, which block a thread
/// for as long as the disk takes. Swift's cooperative pool has one thread per
/// core (two here), so a blocked call there stalls every task in the process;
/// these threads exist so that never happens.
final class BlockingThreadPool: Sendable {
    private struct State {
        var jobs: Deque<@Sendable () -> Void> = []
        var stopping = false
    }

    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let threadCount: Int

    init(threads: Int, name: String) {
        threadCount = threads
        for number in 0..<threads {
            EngineThread.start("\(name)-\(number)") { [self] in self.work() }
        }
    }

    /// Queues `job` for one of the pool's threads; returns `false` (and
    /// runs nothing) once the pool is shut down. Never runs `job` on the
    /// caller's thread, which may be one of Swift's cooperative threads.
    private func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state -> Bool in
            if state.stopping { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { available.signal() }
        return accepted
    }

    /// Runs `body` on one of the pool's threads and returns its result.
    /// Throws ``OutboxLogError/Code/closed`` without running it once the
    /// pool is shut down (the log was closed meanwhile).
    func run<T: Sendable>(_ body: @escaping @Sendable () throws(OutboxLogError) -> T) async throws(OutboxLogError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, OutboxLogError>, Never>) in
            let accepted = submit {
                do throws(OutboxLogError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !accepted { continuation.resume(returning: .failure(.closed())) }
        }
        return try result.get()
    }

    /// Lets the threads finish the queued jobs and exit. Jobs submitted
    /// afterwards are refused.
    func shutdown() {
        state.withLock { $0.stopping = true }
        for _ in 0..<threadCount { available.signal() }
    }

    private func work() {
        while true {
            available.wait()
            let next = state.withLock { state -> (@Sendable () -> Void)?? in
                if let job = state.jobs.popFirst() { return .some(job) }
                return state.stopping ? .none : .some(nil)
            }
            switch next {
            case .none: return
            case .some(nil): continue
            case .some(.some(let job)): job()
            }
        }
    }
}
