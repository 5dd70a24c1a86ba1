import Outbox
import OutboxLog

/// Writes a run of entries into a user's queue a batch at a time, each
/// batch atomic and durable before it is acknowledged. A run of one batch
/// goes directly into the queue if no other process holds it, else through
/// a spool. A longer run goes through spools (``OutboxSpoolWriter``) unless
/// its entries have dependencies, which only the queue can check:
/// the queue is never held for the length of the run (the app keeps its
/// queue meanwhile), and this process keeps nothing per entry, so its
/// memory stays bounded however long the run. Only one batch is in memory
/// at a time, and a process killed meanwhile loses only the batch it was
/// writing: every acknowledged one is on disk, moved in by the next
/// process that opens the queue (or by its holder).
struct BatchedEnqueue {
    let options: OutboxRootOptions
    let user: String

    /// Writes entries `0..<count`, `batch` at a time, each batch made by
    /// `make` and handed to `acknowledge` once durable.
    func run(
        count: Int, batch: Int, dependencies: Bool,
        make: (Range<Int>) -> [OutboxEnqueueRequest],
        acknowledge: (OutboxSharedEnqueueResult) throws -> Void
    ) async throws {
        let configuration = options.configuration(create: true)
        if count > batch && !dependencies {
            return try await runThroughSpools(count: count, batch: batch, make: make, acknowledge: acknowledge)
        }
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

    /// A run of several batches, each written into a spool and acknowledged
    /// once durable there.
    private func runThroughSpools(
        count: Int, batch: Int,
        make: (Range<Int>) -> [OutboxEnqueueRequest],
        acknowledge: (OutboxSharedEnqueueResult) throws -> Void
    ) async throws {
        let writer: OutboxSpoolWriter
        do {
            writer = try await LogOutboxStore.spoolWriter(
                root: options.root, partition: user, configuration: options.configuration(create: true))
        } catch {
            throw CommandFailure.outbox(error, directory: options.directory, opening: true)
        }
        var next = 0
        do {
            while next < count {
                let range = next..<min(count, next + batch)
                try acknowledge(.spooled(try await writer.enqueue(make(range))))
                next = range.upperBound
            }
            try await writer.close()
        } catch let error as OutboxError {
            try? await writer.close()
            throw CommandFailure.outbox(error, directory: options.directory, opening: false)
        } catch {
            try? await writer.close()
            throw error
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
