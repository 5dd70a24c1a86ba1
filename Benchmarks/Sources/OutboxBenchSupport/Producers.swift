/// What a timed run of concurrent producers did.
public struct TimedRun: Sendable {
    /// Operations completed.
    public var operations: Int
    /// From the start until the last producer finished, in seconds.
    public var seconds: Double
    /// The latency of every operation, in nanoseconds.
    public var latencies: Samples
    /// Percentiles a system measured itself, for one whose operations we
    /// cannot time one by one (another program's benchmark tool); then
    /// ``latencies`` is empty.
    public var reportedLatency: ReportedLatency?

    public var throughput: Double { seconds > 0 ? Double(operations) / seconds : 0 }

    public init(operations: Int, seconds: Double, latencies: Samples, reportedLatency: ReportedLatency? = nil) {
        self.operations = operations
        self.seconds = seconds
        self.latencies = latencies
        self.reportedLatency = reportedLatency
    }
}

/// Latency percentiles as another tool reported them, in nanoseconds.
public struct ReportedLatency: Sendable {
    public var p50Nanoseconds: Double
    public var p99Nanoseconds: Double

    public init(p50Nanoseconds: Double, p99Nanoseconds: Double) {
        self.p50Nanoseconds = p50Nanoseconds
        self.p99Nanoseconds = p99Nanoseconds
    }
}

/// Runs `producers` concurrent tasks, each calling `operation` until
/// `seconds` have passed (at least `minimumPerProducer` times), and times
/// every call. `operation` receives the producer's number and a counter of
/// its own calls, and returns how many operations the call counts for
/// (an enqueue-then-acknowledge pair returns 2, with one latency sample per
/// operation, see ``OperationTimes``).
public func runTimed(
    producers: Int, seconds: Double, minimumPerProducer: Int = 1,
    _ operation: @escaping @Sendable (_ producer: Int, _ iteration: Int) async throws -> OperationTimes
) async throws -> TimedRun {
    let start = monotonicNanoseconds()
    let deadline = start + UInt64(seconds * 1e9)
    let results = try await withThrowingTaskGroup(of: (Int, Samples).self) { group in
        for producer in 0..<producers {
            group.addTask {
                var samples = Samples()
                samples.reserve(4096)
                var operations = 0
                var iteration = 0
                while iteration < minimumPerProducer || monotonicNanoseconds() < deadline {
                    let times = try await operation(producer, iteration)
                    for latency in times.latencies { samples.append(latency) }
                    operations += times.latencies.count
                    iteration += 1
                }
                return (operations, samples)
            }
        }
        var all: [(Int, Samples)] = []
        for try await result in group { all.append(result) }
        return all
    }
    let end = monotonicNanoseconds()
    var latencies = Samples()
    var operations = 0
    for (count, samples) in results {
        operations += count
        latencies.append(contentsOf: samples)
    }
    return TimedRun(operations: operations, seconds: Double(end - start) / 1e9, latencies: latencies)
}

/// The same for blocking code, on one dedicated thread (a single producer).
public func runTimedBlocking(
    seconds: Double, minimum: Int = 1, _ operation: @escaping @Sendable (_ iteration: Int) throws -> OperationTimes
) async throws -> TimedRun {
    try await onDedicatedThread {
        let start = monotonicNanoseconds()
        let deadline = start + UInt64(seconds * 1e9)
        var samples = Samples()
        samples.reserve(4096)
        var iteration = 0
        while iteration < minimum || monotonicNanoseconds() < deadline {
            let times = try operation(iteration)
            for latency in times.latencies { samples.append(latency) }
            iteration += 1
        }
        let end = monotonicNanoseconds()
        return TimedRun(operations: samples.count, seconds: Double(end - start) / 1e9, latencies: samples)
    }
}

/// The latencies of the operations one call performed (usually one).
public struct OperationTimes: Sendable {
    public var latencies: [UInt64]
    public init(_ latencies: UInt64...) { self.latencies = latencies }
    public init(latencies: [UInt64]) { self.latencies = latencies }

    /// Times `body` as one operation.
    @inline(__always)
    public static func time(_ body: () async throws -> Void) async rethrows -> OperationTimes {
        let start = monotonicNanoseconds()
        try await body()
        return OperationTimes(monotonicNanoseconds() - start)
    }

    /// Times a blocking `body` as one operation.
    @inline(__always)
    public static func timeBlocking(_ body: () throws -> Void) rethrows -> OperationTimes {
        let start = monotonicNanoseconds()
        try body()
        return OperationTimes(monotonicNanoseconds() - start)
    }
}
