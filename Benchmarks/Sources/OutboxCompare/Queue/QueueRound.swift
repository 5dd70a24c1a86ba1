import Foundation
import OutboxBenchSupport
import Synchronization

/// What one round of a queue row does, the same for every contender.
struct QueueWorkload: Sendable {
    /// Tasks (ours) or threads (peers) appending; 0 for the consume row.
    var producers: Int
    /// Consumers reading from the start of the round until every element
    /// is consumed.
    var consumers: Int
    var durability: QueueDurability
    /// Appends per second for each producer, or `nil` for as fast as it goes.
    var pace: Double?
    /// Elements in the queue before the clock starts (the consume row).
    var prefill: Int
    var elementBytes: Int
    /// Elements a consumer takes at most per read.
    var batch: Int = 256

    /// What the row's latency percentiles measure.
    var latencyMeasures: LatencyMeasure {
        if producers == 0 { return .none }
        return pace == nil ? .appendCall : .appendToConsume
    }

    enum LatencyMeasure {
        /// How long each append call took to return at the row's durability.
        case appendCall
        /// From an append returning to a consumer holding the element (an
        /// element a consumer held before its append returned counts 0).
        case appendToConsume
        case none
    }

    /// Element `id`: its number in the first 8 bytes (little-endian), padded.
    func element(_ id: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0x5A, count: max(8, elementBytes))
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: UInt64(id) >> (8 * index)) }
        return bytes
    }

    static func id(of element: some Collection<UInt8>) -> Int {
        var value: UInt64 = 0
        for (index, byte) in element.prefix(8).enumerated() { value |= UInt64(byte) << (8 * index) }
        return Int(truncatingIfNeeded: value)
    }
}

/// The bookkeeping of one round: how many elements were produced, how many
/// each consumer holds, and when every consumer had all of them.
///
/// With `fanOut` (our named consumers) the round ends when each consumer
/// has every element; otherwise (consumers that compete, each element
/// going to one) when they hold every element between them.
final class RoundProgress: Sendable {
    private struct State {
        var total: Int?
        var held: [Int]
        var finishedAt: UInt64?
        var waiter: CheckedContinuation<UInt64, Never>?
    }

    private let state: Mutex<State>
    private let fanOut: Bool

    init(consumers: Int, fanOut: Bool, total: Int? = nil) {
        self.fanOut = fanOut
        state = Mutex(State(total: total, held: Array(repeating: 0, count: consumers)))
    }

    /// Consumer `consumer` took `count` more elements.
    func took(_ count: Int, consumer: Int) {
        let waiter = state.withLock { state in
            state.held[consumer] += count
            return Self.finishIfDone(&state, fanOut: fanOut)
        }
        waiter?.resume(returning: state.withLock { $0.finishedAt! })
    }

    /// The producers are done: `total` elements went in.
    func produced(_ total: Int) {
        let waiter = state.withLock { state in
            state.total = total
            return Self.finishIfDone(&state, fanOut: fanOut)
        }
        waiter?.resume(returning: state.withLock { $0.finishedAt! })
    }

    /// Whether consumers may stop: every element is held.
    var isFinished: Bool { state.withLock { $0.finishedAt != nil } }

    /// When every element was held (monotonic nanoseconds).
    func finished() async -> UInt64 {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> UInt64? in
                if let at = state.finishedAt { return at }
                state.waiter = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    private static func finishIfDone(_ state: inout State, fanOut: Bool) -> CheckedContinuation<UInt64, Never>? {
        guard state.finishedAt == nil, let total = state.total else { return nil }
        // No consumer (the produce row): done once the producers are.
        let done = fanOut || state.held.isEmpty
            ? state.held.allSatisfy { $0 >= total } : state.held.reduce(0, +) >= total
        guard done else { return nil }
        state.finishedAt = monotonicNanoseconds()
        defer { state.waiter = nil }
        return state.waiter
    }
}

/// When each element was appended (its append returned) and when a
/// consumer first held it, for the append-to-consume rows.
final class DeliveryTimes: Sendable {
    private let returned = Mutex([Int: UInt64]())
    private let held = Mutex([Int: UInt64]())

    func appendReturned(_ id: Int, at time: UInt64) { returned.withLock { $0[id] = time } }

    func consumerHeld(_ ids: [Int], at time: UInt64) {
        held.withLock { held in
            for id in ids where held[id] == nil { held[id] = time }
        }
    }

    /// Held − returned per element, 0 where the consumer held it first.
    func latencies() -> (samples: Samples, heldFirst: Int) {
        let returned = returned.withLock { $0 }
        let held = held.withLock { $0 }
        var samples = Samples()
        var heldFirst = 0
        for (id, at) in returned {
            guard let seen = held[id] else { continue }
            if seen < at { heldFirst += 1 }
            samples.append(seen >= at ? seen - at : 0)
        }
        return (samples, heldFirst)
    }
}

/// Waits between paced appends: the next append is due `interval` after
/// the previous one was due, so a slow append does not lower the rate.
struct Pacer {
    let interval: UInt64
    var due: UInt64

    init(perSecond: Double) {
        interval = UInt64(1e9 / perSecond)
        due = monotonicNanoseconds()
    }

    mutating func waitAsync() async throws {
        due += interval
        let now = monotonicNanoseconds()
        if due > now { try await Task.sleep(for: .nanoseconds(Int(due - now))) }
    }

    mutating func waitBlocking() {
        due += interval
        let now = monotonicNanoseconds()
        if due > now { usleep(UInt32((due - now) / 1000)) }
    }
}
