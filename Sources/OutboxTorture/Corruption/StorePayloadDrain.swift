import Foundation
import Logging
import Outbox
import OutboxLocking

/// A store case with a damaged payload file drains its queue to a handler
/// that knows every body: no handler may be handed other bytes than were
/// enqueued, and the entry whose file is damaged must end quarantined with
/// a payload reason (the rule of Docs/STORE-FORMAT.md, "Payload files").
enum StorePayloadDrain {
    static func check(
        _ store: LogOutboxStore, base: StoreBase, expectations: StoreExpectations, first: [OutboxEntry.ID: OutboxEntry]
    ) async throws {
        var payloads = base.live.mapValues(\.payload)
        for spool in base.spools { payloads.merge(spool.entries.mapValues(\.payload)) { old, _ in old } }
        for forged in expectations.forged { payloads.merge(forged.good.mapValues(\.payload)) { old, _ in old } }
        let expected = payloads
        let wrong = Locked<[String]>([])
        let handler = ClosureOutboxHandler { delivery in
            let body = try await delivery.loadPayload()
            if let written = expected[delivery.id], body != written {
                wrong.withLock { $0.append("\(delivery.id) was handed \(body.count) other bytes") }
            }
            return .delivered(serverID: nil)
        }
        var configuration = OutboxDispatcherConfiguration()
        configuration.logger = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        let dispatcher = OutboxDispatcher(
            store: store, handlers: Dictionary(uniqueKeysWithValues: StoreBase.types.map { ($0, handler) }),
            configuration: configuration)
        _ = await dispatcher.drain(until: Date().addingTimeInterval(30))
        await dispatcher.stop()
        if let sent = wrong.withLock({ $0.first }) { throw StoreOpenCheck.Violation("a damaged payload was sent: \(sent)") }
        for id in expectations.damagedPayloads where first[id] != nil {
            let entry = try await store.entry(id)
            guard entry?.status == .quarantined, entry?.lastFailure?.cause == .payloadFileDamaged else {
                throw StoreOpenCheck.Violation(
                    "the entry whose payload file is damaged is "
                        + (entry.map { "\($0.status): \($0.lastFailure.map(String.init(describing:)) ?? "")" } ?? "gone")
                        + " after a drain")
            }
        }
    }
}
