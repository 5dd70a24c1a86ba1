import Foundation
import OutboxLog
import SystemPackage
import OutboxModel

/// Where a store writes its checkpoint (``StoreCheckpoint``) and how often.
struct CheckpointFile: Sendable {
    var path: FilePath
    var format: RecordFormat
    var fileSystem: any FileSystem
    var log: OutboxLog
    /// About this many bytes written to the log between two checkpoints (or
    /// the last checkpoint's size, if larger).
    var interval: Int
}

/// The checkpoints' bookkeeping, under the store's lock.
struct StoreCheckpointing: Sendable {
    /// About how many bytes the store wrote to its log since the last checkpoint.
    var bytesSince = 0
    var lastSize = 0
    /// A checkpoint is being written.
    var running = false
    /// Callers waiting for the running one to finish.
    var waiters: [CheckedContinuation<Void, Never>] = []
    /// The background load, if one runs: `close()` waits for it.
    var loadTask: Task<Void, Never>?
}

/// Writing the store checkpoint: at close, after each compaction of the
/// log (the old checkpoint no longer matches it), and once about
/// ``CheckpointFile/interval`` bytes went to the log since the last one.
///
/// The scheduler's tables are captured under the store's lock together with
/// the log's position (no change can come between); the checkpoint is
/// written once every record up to that position is durable — otherwise a
/// power loss could leave a checkpoint describing records that are gone —
/// encoded and written off the cooperative pool, through a synced
/// temporary file and a rename. A checkpoint only saves reading: one that
/// cannot be written is skipped and the store goes on.
extension StoreCore {
    /// Counts `bytes` written; whether a checkpoint is now due (and claimed).
    func noteWritten(bytes: Int, in state: inout State) -> Bool {
        guard let checkpointFile else { return false }
        state.checkpoints.bytesSince += bytes
        guard !state.checkpoints.running,
            state.checkpoints.bytesSince >= max(checkpointFile.interval, state.checkpoints.lastSize)
        else { return false }
        state.checkpoints.running = true
        return true
    }

    /// Writes a checkpoint in the background (one claimed by ``noteWritten(bytes:in:)``).
    func startCheckpoint() {
        Task.detached { [self] in await self.writeClaimedCheckpoint() }
    }

    /// Writes one in the background unless one is running: after a
    /// compaction of the log (the old one no longer matches it), or after a
    /// large queue was loaded without one.
    func writeCheckpointSoon() {
        let claimed = state.withLock { state -> Bool in
            guard !state.checkpoints.running, !state.closed else { return false }
            state.checkpoints.running = true
            return true
        }
        if claimed { startCheckpoint() }
    }

    /// Writes a checkpoint now; with `waitingForRunning`, first waits for
    /// one already being written (so the newest state is the one kept).
    func writeCheckpoint(waitingForRunning: Bool) async {
        while true {
            let claimed = state.withLock { state -> Bool? in
                if !state.checkpoints.running {
                    state.checkpoints.running = true
                    return true
                }
                return waitingForRunning ? nil : false
            }
            if claimed == true { break }
            if claimed == false { return }
            await waitForCheckpoint()
        }
        await writeClaimedCheckpoint()
    }

    private func writeClaimedCheckpoint() async {
        defer {
            let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.checkpoints.running = false
                defer { state.checkpoints.waiters = [] }
                return state.checkpoints.waiters
            }
            for waiter in waiting { waiter.resume() }
        }
        guard let checkpointFile else { return }
        let captured = state.withLock { state -> (Scheduler.CheckpointContent, LogPosition)? in
            guard state.loading == nil, state.failure == nil else { return nil }
            state.checkpoints.bytesSince = 0
            return (state.scheduler.checkpointContent, checkpointFile.log.position)
        }
        guard let (content, position) = captured else { return }
        do throws(OutboxError) {
            do { try await checkpointFile.log.waitUntilDurable(position.sequence) } catch { throw .storage(error) }
            let size = try await offThePool { () throws(OutboxError) -> Int in
                let body = StoreCheckpointBody.encode(content, format: checkpointFile.format)
                let file = try StoreCheckpoint.file(
                    body: body, position: position, nextSequence: content.nextSequence, format: checkpointFile.format)
                try SmallFile.write(file, to: checkpointFile.path, fileSystem: checkpointFile.fileSystem, replacing: true)
                return file.count
            }
            state.withLock { $0.checkpoints.lastSize = size }
        } catch {
            // Only an accelerator: the next open reads every entry instead.
        }
    }

    /// Waits until no checkpoint is being written.
    func waitForCheckpoint() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state -> Bool in
                guard state.checkpoints.running else { return false }
                state.checkpoints.waiters.append(continuation)
                return true
            }
            if !running { continuation.resume() }
        }
    }

    /// Stops a background load that may still run (at close) and waits for it.
    func stopLoading() async {
        guard let task = state.withLock({ $0.checkpoints.loadTask }) else { return }
        task.cancel()
        await task.value
    }
}
