import OutboxLocking
import OutboxLog
import OutboxLogTesting
import OutboxQueue
import SystemPackage

/// The child side of the queue mode: opens a queue, and runs two producers,
/// two named consumers and a trimmer side by side, printing every
/// acknowledgement (``QueueWorkerLine``) the moment its call returns. The
/// parent kills it whenever it likes and holds the lines to the oracle.
public enum QueueWorker {
    /// What to run; the parent passes these on the command line.
    public struct Job: Sendable {
        public var directory: FilePath
        public var seed: UInt64
        public var cycle: Int
        /// Elements each producer appends.
        public var count: Int

        public init(directory: FilePath, seed: UInt64, cycle: Int, count: Int) {
            self.directory = directory
            self.seed = seed
            self.cycle = cycle
            self.count = count
        }
    }

    static let producers = 2
    static let consumers = ["c0", "c1"]

    /// The bytes of producer `producer`'s element `index` in `cycle`: its
    /// name, then padding that the parent checks too.
    static func element(producer: Int, cycle: Int, index: Int) -> [UInt8] {
        Array("\(producer):\(cycle):\(index)|".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 80)
    }

    /// The element's name if `bytes` are exactly an element, else `garbled`.
    static func name(of bytes: [UInt8]) -> String {
        guard let bar = bytes.firstIndex(of: UInt8(ascii: "|")) else { return "garbled" }
        let name = String(decoding: bytes[..<bar], as: UTF8.self)
        let parts = name.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3, element(producer: parts[0], cycle: parts[1], index: parts[2]) == bytes else { return "garbled" }
        return name
    }

    /// The queue's configuration: small segments, so that trims remove
    /// some, and a size limit that waits for every consumer.
    public static func configuration() -> DurableQueue.Configuration {
        var configuration = DurableQueue.Configuration()
        configuration.elements.segmentSize = 16 << 10
        configuration.retention = QueueRetention(maximumBytes: 48 << 10)
        return configuration
    }

    /// Runs the job; returns the exit status (0 done, 2 the open failed, 3 a call failed).
    public static func run(_ job: Job) async -> Int32 {
        let queue: DurableQueue
        do { queue = try await DurableQueue.open(at: job.directory, configuration: configuration()) } catch {
            QueueWorkerLine.failed("open: \(error)").send()
            return 2
        }
        QueueWorkerLine.ready.send()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                let producing = Locked(producers)
                for producer in 0..<producers {
                    group.addTask {
                        defer { producing.withLock { $0 -= 1 } }
                        try await produce(producer, job, queue)
                    }
                }
                for (number, name) in consumers.enumerated() {
                    let consumer = try await queue.consumer(named: name)
                    QueueWorkerLine.resumed(consumer: name, after: consumer.committed?.rawValue ?? 0).send()
                    group.addTask { try await consume(consumer, number, job, queue, producing) }
                }
                group.addTask { try await trim(queue, producing) }
                try await group.waitForAll()
            }
            try await queue.close()
        } catch {
            QueueWorkerLine.failed("\(error)").send()
            return 3
        }
        QueueWorkerLine.done.send()
        return 0
    }

    private static func produce(_ producer: Int, _ job: Job, _ queue: DurableQueue) async throws {
        var random = SplitMix64.derived(seed: job.seed, stream: 0x5155_0000_0000_0000 | UInt64(job.cycle) << 8 | UInt64(producer))
        var index = 0
        while index < job.count {
            let size = min(1 + random.next(below: 4), job.count - index)
            let batch = (index..<index + size).map { element(producer: producer, cycle: job.cycle, index: $0) }
            // Never buffered: a kill -9 may take those, and the oracle holds every acknowledgement.
            let last = try await queue.append(contentsOf: batch, durability: random.nextBool() ? .written : .durable)
            // A batch's elements take consecutive positions, ending at `last`.
            for offset in 0..<size {
                QueueWorkerLine.appended(producer: producer, index: index + offset, position: last.rawValue - UInt64(size - 1 - offset)).send()
            }
            index += size
        }
    }

    private static func consume(
        _ consumer: QueueConsumer, _ number: Int, _ job: Job, _ queue: DurableQueue, _ producing: Locked<Int>
    ) async throws {
        var random = SplitMix64.derived(seed: job.seed, stream: 0x5143_0000_0000_0000 | UInt64(job.cycle) << 8 | UInt64(number))
        while true {
            let done = producing.withLock { $0 == 0 }
            let page = try await consumer.next(max: 1 + random.next(below: 8))
            for element in page {
                QueueWorkerLine.delivered(consumer: consumer.name, position: element.position.rawValue, element: name(of: element.bytes)).send()
            }
            if let last = page.last, random.next(below: 3) != 0 {
                try await consumer.commit(through: last.position, durability: random.nextBool() ? .written : .durable)
                QueueWorkerLine.committed(consumer: consumer.name, through: last.position.rawValue).send()
            } else if !page.isEmpty, random.next(below: 10) == 0 {
                consumer.rewind()
                QueueWorkerLine.rewound(consumer: consumer.name).send()
            }
            if page.isEmpty {
                // Caught up after the producers finished: commit what was read, and stop.
                if done {
                    if let read = consumer.position, read != consumer.committed {
                        try await consumer.commit(through: read, durability: .durable)
                        QueueWorkerLine.committed(consumer: consumer.name, through: read.rawValue).send()
                    }
                    return
                }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    private static func trim(_ queue: DurableQueue, _ producing: Locked<Int>) async throws {
        while producing.withLock({ $0 > 0 }) {
            try await Task.sleep(for: .milliseconds(20))
            let report = try await queue.trim()
            QueueWorkerLine.trimmed(below: report.removedBelow?.rawValue ?? 0).send()
        }
    }
}
