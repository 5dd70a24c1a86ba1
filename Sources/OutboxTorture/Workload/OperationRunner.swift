import OutboxLog

/// Runs torture steps against a real ``OutboxLog`` the way the oracle
/// models them.
public enum OperationRunner {
    /// Runs `operation`; returns whether it appended anything (which decides
    /// what its acknowledgement promised, see ``TortureOperation/promise(appended:)``).
    @discardableResult
    public static func run(_ operation: TortureOperation, on log: OutboxLog) async throws(OutboxLogError) -> Bool {
        switch operation {
        case .put(let key, let value, let durability):
            try await log.put(key, value, durability: durability)
            return true
        case .annotateOrPut(let key, _, let durability):
            // Resolved against the log's own index: the oracle resolves the
            // same step against its model of the same state.
            let write = operation.writes(isLive: log.contains)![0]
            if write.kind == .annotation {
                try await log.annotate(key, write.payload, durability: durability)
            } else {
                try await log.put(key, write.payload, durability: durability)
            }
            return true
        case .delete(let key, let durability):
            return try await log.delete(key, durability: durability) != nil
        case .batch(_, let durability):
            try await log.append(operation.writes(isLive: log.contains)!, durability: durability)
            return true
        case .flush:
            try await log.flush()
            return false
        case .sync:
            try await log.sync()
            return false
        case .compact:
            try await log.compact()
            return false
        }
    }

    /// Runs `operation`, then waits for any compaction it started in the
    /// background (after a segment roll) to finish, whether the step
    /// succeeded or not. With a ``TortureLogConfiguration`` made
    /// `deterministic`, the engine's threads then take turns in one order:
    /// a simulated mode makes the same file-system calls on every run, so
    /// a fault aimed at "the Nth write" hits the same write, and a printed
    /// violation replays.
    @discardableResult
    public static func runSettled(_ operation: TortureOperation, on log: OutboxLog) async throws(OutboxLogError) -> Bool {
        do {
            let appended = try await run(operation, on: log)
            await log.waitForBackgroundCompaction()
            return appended
        } catch {
            await log.waitForBackgroundCompaction()
            throw error
        }
    }
}
