import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage
import OutboxModel

/// Which payload file belongs to which live entry (by the entry's log key),
/// and the deletions of the files of entries that ended.
///
/// A file is deleted only once the tombstone that ended its entry is
/// durable: a power loss that brings the entry back must find its file
/// (Docs/DURABILITY.md, "Payload files"). The deletion runs in a task of
/// its own, off the cooperative pool; ``settle()`` waits for those under
/// way (the store's close does, before the log closes).
final class PayloadFileLedger: Sendable {
    private struct State {
        var files: [LogKey: FilePath] = [:]
        var removals: [UUID: Task<Void, Never>] = [:]
    }

    private let state = Locked(State())

    init(files: [LogKey: FilePath] = [:]) {
        state.withLock { $0.files = files }
    }

    /// The entry stored under `key` references `file` (its body record is
    /// being handed to the log).
    func recorded(_ file: FilePath, key: LogKey) {
        state.withLock { $0.files[key] = file }
    }

    /// The files of the entries that `writes` delete (their tombstones),
    /// forgotten here; empty in the common case, and without the lock for
    /// a batch that deletes nothing.
    func ended(by writes: some Sequence<LogWrite>) -> [FilePath] {
        // Most batches (an enqueue, a claim's marks) end nothing.
        guard writes.contains(where: { $0.kind == .tombstone }) else { return [] }
        return state.withLock { state in
            guard !state.files.isEmpty else { return [] }
            return writes.compactMap { write in
                write.kind == .tombstone ? state.files.removeValue(forKey: write.key) : nil
            }
        }
    }

    /// Deletes `files` once `ticket` (the batch that ended their entries)
    /// is durable. If that sync fails the log is poisoned and the files
    /// stay, to be removed as orphans by the next open.
    func remove(_ files: [FilePath], after ticket: LogTicket, from store: PayloadFileStore) {
        guard !files.isEmpty else { return }
        let id = UUID()
        // Created under the lock: the task's own removal from the table
        // (its last step) waits for its insertion.
        state.withLock { state in
            state.removals[id] = Task {
                do throws(OutboxLogError) {
                    try await ticket.wait(for: .durable)
                    _ = try? await offThePool { () throws(OutboxError) in try store.remove(files) }
                } catch {}
                _ = self.state.withLock { $0.removals.removeValue(forKey: id) }
            }
        }
    }

    /// Waits for the deletions under way (and those they started).
    func settle() async {
        while let (id, task) = state.withLock({ $0.removals.first.map { ($0.key, $0.value) } }) {
            await task.value
            _ = state.withLock { $0.removals.removeValue(forKey: id) }
        }
    }
}
