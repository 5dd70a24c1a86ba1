import Foundation
import OutboxBenchSupport
import OutboxLog
import OutboxQueue

/// One round of a queue row on our `DurableQueue`: producer tasks append,
/// one named consumer per reader takes every element in batches
/// (`QueueConsumer.batches`, which waits for appends) and commits each
/// batch at the row's durability.
enum OurQueueRound {
    static func run(_ queue: DurableQueue, _ workload: QueueWorkload, seconds: Double) async throws -> TimedRun {
        let durability: Durability = workload.durability == .durable ? .durable : .written
        let progress = RoundProgress(
            consumers: workload.consumers, fanOut: true, total: workload.producers == 0 ? workload.prefill : nil)
        let times = DeliveryTimes()
        var consumers: [QueueConsumer] = []
        for index in 0..<workload.consumers {
            consumers.append(try await queue.consumer(named: "c\(index)", startingAt: .oldest))
        }
        let start = monotonicNanoseconds()
        let consuming = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, consumer) in consumers.enumerated() {
                    group.addTask {
                        try await consume(consumer, index, workload, durability, progress, times)
                    }
                }
                try await group.waitForAll()
            }
        }
        var appends = TimedRun(operations: 0, seconds: 0, latencies: Samples())
        if workload.producers > 0 {
            appends = try await produce(into: queue, workload, durability, seconds: seconds, times: times)
            progress.produced(appends.operations)
        }
        let finishedAt = await progress.finished()
        consuming.cancel()
        try await consuming.value
        return roundResult(workload, appends: appends, times: times, seconds: Double(finishedAt - start) / 1e9)
    }

    private static func consume(
        _ consumer: QueueConsumer, _ index: Int, _ workload: QueueWorkload, _ durability: Durability,
        _ progress: RoundProgress, _ times: DeliveryTimes
    ) async throws {
        let timed = workload.latencyMeasures == .appendToConsume
        for try await batch in consumer.batches(max: workload.batch) {
            if timed { times.consumerHeld(batch.map { QueueWorkload.id(of: $0.bytes) }, at: monotonicNanoseconds()) }
            try await consumer.commit(through: batch[batch.count - 1].position, durability: durability)
            progress.took(batch.count, consumer: index)
            if progress.isFinished { return }
        }
    }

    private static func produce(
        into queue: DurableQueue, _ workload: QueueWorkload, _ durability: Durability, seconds: Double,
        times: DeliveryTimes
    ) async throws -> TimedRun {
        let start = monotonicNanoseconds()
        let interval = workload.pace.map { UInt64(1e9 / $0) }
        return try await runTimed(producers: workload.producers, seconds: seconds) { producer, iteration in
            if let interval {
                let due = start + UInt64(iteration) * interval
                let now = monotonicNanoseconds()
                if due > now { try await Task.sleep(for: .nanoseconds(Int(due - now))) }
            }
            let id = producer << 32 | iteration
            let element = workload.element(id)
            let before = monotonicNanoseconds()
            try await queue.append(element, durability: durability)
            let after = monotonicNanoseconds()
            if interval != nil { times.appendReturned(id, at: after) }
            return OperationTimes(after - before)
        }
    }
}

/// The round's figures: elements over the time until every consumer held
/// them, with the latencies the row measures.
func roundResult(_ workload: QueueWorkload, appends: TimedRun, times: DeliveryTimes, seconds: Double) -> TimedRun {
    let elements = workload.producers == 0 ? workload.prefill : appends.operations
    switch workload.latencyMeasures {
    case .appendCall: return TimedRun(operations: elements, seconds: seconds, latencies: appends.latencies)
    case .appendToConsume: return TimedRun(operations: elements, seconds: seconds, latencies: times.latencies().samples)
    case .none: return TimedRun(operations: elements, seconds: seconds, latencies: Samples())
    }
}
