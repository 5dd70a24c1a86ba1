#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CMallocStats
import Foundation

/// Monotonic time in nanoseconds.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Latency samples in nanoseconds, with percentiles.
public struct Samples: Sendable {
    public private(set) var values: [UInt64] = []
    private var sorted = true

    public init() {}

    public init(_ values: [UInt64]) {
        self.values = values
        sorted = false
    }

    public var count: Int { values.count }

    public mutating func reserve(_ capacity: Int) { values.reserveCapacity(capacity) }

    public mutating func append(_ value: UInt64) {
        values.append(value)
        sorted = false
    }

    public mutating func append(contentsOf other: Samples) {
        values.append(contentsOf: other.values)
        sorted = false
    }

    /// The `p`-th percentile (0...100), nearest rank; 0 if empty.
    public mutating func percentile(_ p: Double) -> UInt64 {
        guard !values.isEmpty else { return 0 }
        if !sorted {
            values.sort()
            sorted = true
        }
        let rank = Int((p / 100 * Double(values.count)).rounded(.up)) - 1
        return values[min(max(rank, 0), values.count - 1)]
    }

    public var mean: Double {
        guard !values.isEmpty else { return 0 }
        return Double(values.reduce(0, +)) / Double(values.count)
    }
}

/// The median of `values` (the mean of the two middle ones for an even count).
public func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Bytes the C allocator has handed out and not had back; `nil` where the
/// platform cannot tell.
public func heapBytesInUse() -> Int? {
    let value = outbox_bench_heap_in_use()
    return value < 0 ? nil : Int(value)
}

/// Resident memory of this process, in bytes (Linux: /proc/self/statm).
public func residentBytes() -> Int? {
    #if os(Linux)
    guard let text = try? readTextFile("/proc/self/statm") else { return nil }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    #else
    return nil
    #endif
}

/// Runs a blocking body on a thread of its own (never on Swift's
/// cooperative pool, which has only one thread per core) and returns its result.
public func onDedicatedThread<T: Sendable>(
    _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    let result: Result<T, any Error> = await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: Result { try body() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
    return try result.get()
}
