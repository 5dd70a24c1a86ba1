import Outbox
import OutboxLog

/// Writes a run of entries into a user's queue a batch at a time, each
/// batch atomic and durable before it is acknowledged: directly while this
/// process can hold the queue (opened once, for every batch), through a
/// spool per batch while another process holds it. Only one batch is in
/// memory at a time, and a process killed meanwhile loses only the batch
/// it was writing: every acknowledged one is on disk.
struct BatchedEnqueue {
    let options: OutboxRootOptions
    let user: String

    /// Writes entries `0..<count`, `batch` at a time, each batch made by
    /// `make` and handed to `acknowledge` once durable.
    func run(
        count: Int, batch: Int,
        make: (Range<Int>) -> [OutboxEnqueueRequest],
        acknowledge: (OutboxSharedEnqueueResult) throws -> Void
    ) async throws {
        let configuration = options.configuration(create: true)
        let store = try await openUnlessHeld(configuration)
        var next = 0
        do {
            while next < count {
                let range = next..<min(count, next + batch)
                let requests = make(range)
                if let store {
                    try acknowledge(.direct(try await store.enqueue(requests)))
                } else {
                    try acknowledge(try await LogOutboxStore.enqueue(requests, root: options.root, partition: user, configuration: configuration))
                }
                next = range.upperBound
            }
        } catch let error as OutboxError {
            try? await store?.close()
            throw CommandFailure.outbox(error, directory: options.directory, opening: store == nil && error.code == .storage)
        } catch {
            try? await store?.close()
            throw error
        }
        do {
            try await store?.close()
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: false)
        }
    }

    /// The queue opened by this process, or `nil` if another process holds
    /// it (the batches then go through spools).
    private func openUnlessHeld(_ configuration: OutboxStoreConfiguration) async throws(CommandFailure) -> LogOutboxStore? {
        do {
            let store = try await LogOutboxStore.open(root: options.root, partition: user, configuration: configuration)
            OutboxRootOptions.warnAboutOpen(store)
            return store
        } catch where error.storage?.code == .locked {
            return nil
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: true)
        }
    }
}
