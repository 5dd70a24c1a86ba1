// The one ThreadSanitizer report this package suppresses, reproduced alone.
//
// A task hands a continuation to a plain thread (not one of Swift's
// executors) through a mutex, and the thread resumes it exactly once. The
// value travels only through the continuation; the mutex orders the hand-off
// of the continuation itself. When the thread resumes it before the task has
// finished suspending, the runtime lets the task continue at once, ordered by
// an atomic inside libswift_Concurrency that ThreadSanitizer does not see.
// TSan then reports a data race between `UnsafeContinuation.resume(returning:)`
// on the thread and the task's side (here `withUnsafeContinuation`'s
// resumption; in the engine sometimes the caller's), on the task's async
// context: a false positive of the runtime, not of this program.
//
// The engine does exactly this: its writer thread resumes the appenders'
// continuations (Sources/OutboxLog/Engine/LogCore+Writer.swift).
//
// Check a newer toolchain with Scripts/sanitizers/check-continuation-false-positive.sh;
// if this program no longer makes TSan report, delete the suppression in tsan.supp.
import Foundation

#if REAL_RACE
// Built with -D REAL_RACE, the program also has a real race, inside the
// closure given to withUnsafeContinuation: the suppression must not hide it.
nonisolated(unsafe) var unprotected = 0
#endif

/// One continuation at a time, passed under a mutex TSan understands.
final class Mailbox: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: UnsafeContinuation<Int, Never>?
    private var finished = false

    func post(_ continuation: UnsafeContinuation<Int, Never>) { lock.withLock { waiting = continuation } }
    func finish() { lock.withLock { finished = true } }

    /// The resuming thread: takes each continuation as soon as it is posted.
    func serve() {
        var round = 0
        while true {
            let (next, done) = lock.withLock { () -> (UnsafeContinuation<Int, Never>?, Bool) in
                defer { waiting = nil }
                return (waiting, finished)
            }
            if let next {
                #if REAL_RACE
                unprotected += 1
                #endif
                next.resume(returning: round)
                round += 1
            } else if done {
                return
            }
        }
    }
}

@main
struct ContinuationHandOff {
    static func main() async {
        let mailbox = Mailbox()
        Thread { mailbox.serve() }.start()
        // Off the main actor, on the global executor, as in the engine.
        let total = await Task.detached { await resume(rounds: 1_000, through: mailbox) }.value
        mailbox.finish()
        print("1000 continuations resumed by a plain thread, total \(total)")
    }

    nonisolated static func resume(rounds: Int, through mailbox: Mailbox) async -> Int {
        var total = 0
        for _ in 0..<rounds {
            total += await withUnsafeContinuation { continuation in
                mailbox.post(continuation)
                #if REAL_RACE
                unprotected += 1
                #endif
                usleep(1_000)  // no synchronization: only makes the thread likely to resume before the task suspends
            }
        }
        return total
    }
}
