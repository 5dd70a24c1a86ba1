import OutboxLog
import SystemPackage

/// The child side of the kill loop (and of the libfiu runs): opens the log,
/// runs one seeded workload, and reports each acknowledgement the moment
/// the call returns. The parent kills it whenever it likes.
public enum LogWorker {
    /// What to run; the parent passes these on the command line.
    public struct Job: Sendable {
        public var directory: FilePath
        public var seed: UInt64
        public var stream: UInt64
        public var count: Int
        public var compactionHeavy: Bool

        public init(directory: FilePath, seed: UInt64, stream: UInt64, count: Int, compactionHeavy: Bool) {
            self.directory = directory
            self.seed = seed
            self.stream = stream
            self.count = count
            self.compactionHeavy = compactionHeavy
        }

        var workload: TortureWorkload {
            TortureWorkload(
                seed: seed, stream: stream, count: count, profile: compactionHeavy ? .compactionHeavy : .init())
        }
    }

    /// Exit statuses of the worker.
    public enum Status {
        public static let done: Int32 = 0
        public static let openFailed: Int32 = 2
        public static let stepFailed: Int32 = 3
    }

    /// Runs the job; returns the exit status.
    public static func run(_ job: Job) async -> Int32 {
        let operations = job.workload.operations()
        let log: OutboxLog
        do {
            // The kill loop's stream ends with the cycle number.
            let preallocated = TortureLogConfiguration.preallocates(cycle: Int(job.stream & 0xFFFF))
            log = try await OutboxLog.open(
                at: job.directory, configuration: TortureLogConfiguration.make(preallocated: preallocated))
        } catch {
            WorkerLine.openFailed(code: WorkerLine.word(error.code), message: error.description).send()
            return Status.openFailed
        }
        WorkerLine.ready.send()
        for (index, operation) in operations.enumerated() {
            // Announce the steps worth killing in the middle of.
            if operation == .compact || operation == .sync { WorkerLine.begin(index).send() }
            do {
                try await OperationRunner.run(operation, on: log)
            } catch {
                WorkerLine.fail(index, code: WorkerLine.word(error.code), message: error.description).send()
                await probePoisoning(log, after: error, operation: operation)
                return Status.stepFailed
            }
            WorkerLine.ack(index).send()
        }
        do {
            try await log.close()
        } catch {
            WorkerLine.fail(operations.count, code: WorkerLine.word(error.code), message: "close: \(error)").send()
            return Status.stepFailed
        }
        WorkerLine.done.send()
        return Status.done
    }

    /// After a failed append, the log must refuse every later append
    /// (`.poisoned`): what reached the disk is unknown. A failed compaction
    /// need not poison the log unless it failed while swapping files in.
    ///
    /// The probe annotates a key that has no value: a poisoned log refuses
    /// it with `.poisoned`, a healthy one with `.invalidArgument` — either
    /// way nothing is written that the oracle would not expect.
    static func probePoisoning(_ log: OutboxLog, after error: OutboxLogError, operation: TortureOperation) async {
        do {
            try await log.annotate("poison-probe", [1], durability: .buffered)
            WorkerLine.poison(ok: false, detail: "the probe append was accepted after \(operation) failed").send()
        } catch {
            if error.code == .poisoned || operation == .compact {
                WorkerLine.poison(ok: true, detail: "").send()
            } else {
                WorkerLine.poison(ok: false, detail: "expected poisoned after a failed \(operation), got \(error)").send()
            }
        }
    }
}
