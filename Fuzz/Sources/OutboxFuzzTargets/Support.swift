import Dispatch
import HTTPTypes
import Hummingbird
import NIOCore
import OutboxLocking

/// Counts the runs of the handler behind the middleware.
final class CountingHandler: Sendable {
    private let count = Locked(0)
    var runs: Int { count.withLock { $0 } }

    /// Records a run; returns its number (1 for the first).
    func run() -> Int {
        count.withLock { count in
            count += 1
            return count
        }
    }
}

/// Collects a response body.
final class BodyCollector: ResponseBodyWriter, Sendable {
    let bytes = Locked<[UInt8]>([])
    func write(_ buffer: ByteBuffer) async throws { bytes.withLock { $0 += Array(buffer: buffer) } }
    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// Runs async work from the fuzzer's synchronous callback, on libFuzzer's
/// own thread (never on Swift's cooperative pool, which runs the work).
enum Blocking {
    static func wait<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<T?>(nil)
        Task {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
