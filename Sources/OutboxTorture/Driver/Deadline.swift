import OutboxLocking

/// Runs `work` but stops waiting for it after `limit`: the torture's guard
/// against an open that hangs. A hung operation cannot be cancelled (it
/// blocks a thread); it is abandoned and reported.
enum Deadline {
    static func run<T: Sendable>(
        _ limit: Duration, _ work: @escaping @Sendable () async -> T
    ) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let once = ResumeOnce(continuation)
            let timer = Task {
                do { try await Task.sleep(for: limit) } catch { return }  // cancelled: the work finished
                once.resume(returning: nil)
            }
            Task {
                let value = await work()
                timer.cancel()
                once.resume(returning: value)
            }
        }
    }

    /// A continuation that only the first of several racers resumes.
    private final class ResumeOnce<T: Sendable>: Sendable {
        private let continuation: Locked<CheckedContinuation<T?, Never>?>

        init(_ continuation: CheckedContinuation<T?, Never>) { self.continuation = Locked(continuation) }

        func resume(returning value: T?) {
            continuation.withLock { $0.take() }?.resume(returning: value)
        }
    }
}
