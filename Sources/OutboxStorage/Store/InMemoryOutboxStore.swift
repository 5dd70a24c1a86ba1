import Foundation
import OutboxLocking
import OutboxModel

/// An ``OutboxStore`` that keeps everything in memory: for unit tests of app
/// code that enqueues or drains. It behaves exactly like ``LogOutboxStore``
/// (the same scheduler and the same conformance suite) but nothing survives
/// the process.
public final class InMemoryOutboxStore: OutboxStore, CoreBackedStore {
    let core: StoreCore

    public init(partition: String = "default", configuration: OutboxStoreConfiguration = OutboxStoreConfiguration()) {
        core = StoreCore(
            partition: partition, configuration: configuration, backend: MemoryBackend(),
            scheduler: Scheduler(partition: partition, configuration: configuration))
    }
}

/// Bodies in a dictionary.
private final class MemoryBackend: StoreBackend {
    private let bodies = Locked<[OutboxEntryID: EntryBody]>([:])

    func prepare(_ body: EntryBody) throws(OutboxError) -> PreparedBody {
        PreparedBody(body: body, encoded: nil, storedBytes: EntryCodec.encode(body).count)
    }

    func reserveRoom(bytes: Int) async throws(OutboxError) -> StoreRoom { .unbounded }

    func submit(
        _ changes: StoreChanges, newBodies: [PreparedBody], scheduler: Scheduler, room: StoreRoom
    ) throws(OutboxError) -> StoreAcknowledgement {
        bodies.withLock { bodies in
            for change in changes {
                switch change {
                case .newEntry(let id):
                    guard var body = newBodies.first(where: { $0.body.id == id })?.body, let metadata = scheduler.metadata(id) else { continue }
                    body.sequence = metadata.sequence
                    bodies[id] = body
                case .remove(let id): bodies[id] = nil
                case .state, .completion, .removeCompletion: break  // the scheduler holds them
                }
            }
        }
        return .immediate
    }

    func bodies(of ids: [OutboxEntryID]) async throws(OutboxError) -> [EntryBody?] {
        bodies.withLock { bodies in ids.map { bodies[$0] } }
    }

    func close() async throws(OutboxError) {}
}
