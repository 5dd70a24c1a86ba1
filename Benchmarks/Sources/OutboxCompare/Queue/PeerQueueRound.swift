import Foundation
import OutboxBenchSupport

/// One round of a queue row on a peer queue: each producer and each
/// consumer is a thread of its own (their calls block), consumers compete
/// for elements and wait on a `Doorbell` rung after every append.
enum PeerQueueRound {
    static func run(_ queue: any BlockingQueue, _ workload: QueueWorkload, seconds: Double) async throws -> TimedRun {
        let progress = RoundProgress(
            consumers: workload.consumers, fanOut: false, total: workload.producers == 0 ? workload.prefill : nil)
        let times = DeliveryTimes()
        let bell = Doorbell()
        let start = monotonicNanoseconds()
        let consuming = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<workload.consumers {
                    group.addTask {
                        try await onDedicatedThread { try consume(queue, index, workload, bell, progress, times) }
                    }
                }
                try await group.waitForAll()
            }
        }
        var appends = TimedRun(operations: 0, seconds: 0, latencies: Samples())
        do {
            if workload.producers > 0 {
                appends = try await produce(into: queue, workload, seconds: seconds, bell: bell, times: times)
                progress.produced(appends.operations)
                bell.ring()
            }
        } catch {
            bell.stop()
            _ = try? await consuming.value
            throw error
        }
        let finishedAt = await progress.finished()
        bell.stop()
        try await consuming.value
        return roundResult(workload, appends: appends, times: times, seconds: Double(finishedAt - start) / 1e9)
    }

    private static func consume(
        _ queue: any BlockingQueue, _ index: Int, _ workload: QueueWorkload, _ bell: Doorbell,
        _ progress: RoundProgress, _ times: DeliveryTimes
    ) throws {
        let timed = workload.latencyMeasures == .appendToConsume
        while true {
            let generation = bell.generation
            let taken = try queue.take(max: workload.batch)
            if !taken.isEmpty {
                if timed { times.consumerHeld(taken.map { QueueWorkload.id(of: $0) }, at: monotonicNanoseconds()) }
                progress.took(taken.count, consumer: index)
                continue
            }
            if progress.isFinished || !bell.wait(after: generation) { return }
        }
    }

    private static func produce(
        into queue: any BlockingQueue, _ workload: QueueWorkload, seconds: Double, bell: Doorbell, times: DeliveryTimes
    ) async throws -> TimedRun {
        let start = monotonicNanoseconds()
        let deadline = start + UInt64(seconds * 1e9)
        let interval = workload.pace.map { UInt64(1e9 / $0) }
        let perProducer = try await withThrowingTaskGroup(of: Samples.self) { group in
            for producer in 0..<workload.producers {
                group.addTask {
                    try await onDedicatedThread {
                        var samples = Samples()
                        var iteration = 0
                        while iteration == 0 || monotonicNanoseconds() < deadline {
                            if let interval {
                                let due = start + UInt64(iteration) * interval
                                let now = monotonicNanoseconds()
                                if due > now { usleep(UInt32((due - now) / 1000)) }
                            }
                            let id = producer << 32 | iteration
                            let element = workload.element(id)
                            let before = monotonicNanoseconds()
                            try queue.produce(element)
                            let after = monotonicNanoseconds()
                            if interval != nil { times.appendReturned(id, at: after) }
                            bell.ring()
                            samples.append(after - before)
                            iteration += 1
                        }
                        return samples
                    }
                }
            }
            var all = Samples()
            for try await samples in group { all.append(contentsOf: samples) }
            return all
        }
        return TimedRun(
            operations: perProducer.count, seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: perProducer)
    }
}
