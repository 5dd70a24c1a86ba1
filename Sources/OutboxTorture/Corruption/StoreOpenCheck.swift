import Foundation
import Outbox
import SystemPackage

/// The oracle of a store case (``StoreCorruption``): a bad file beside the
/// log quarantines itself, never the store. The owner's open of the damaged
/// copy must succeed (with the right key) and hand back exactly what was
/// acknowledged — every entry enqueued directly and not delivered, every
/// spooled entry of an undamaged spool, once each, with exactly its fields;
/// an entry of a damaged spool there, or its spool reported, or no longer
/// served by the spool's own log (``SpoolProbe``); a forged
/// record set aside and reported; nothing else — every delivered
/// entry's completion, every stray in `payloads/` reported, every payload
/// file that is intact read back exactly. It must take a write; reopened,
/// it must hold the same plus that write, and no stray the damage added may
/// have been deleted. With a damaged payload file, a drain must quarantine
/// that entry and never hand a handler other bytes than were enqueued.
enum StoreOpenCheck {
    enum Outcome: Sendable {
        /// Every check held: this many entries were read back and checked;
        /// this many entries of damaged spools were no longer served by
        /// their spool's own log (``SpoolProbe``).
        case passed(Int, notServed: Int)
        case violation(String)
    }

    struct Violation: Error {
        var detail: String
        init(_ detail: String) { self.detail = detail }
    }

    static func run(
        root: String, base: StoreBase, expectations: StoreExpectations, configuration: OutboxStoreConfiguration
    ) async -> Outcome {
        do {
            var probes: [String: SpoolProbe] = [:]
            for spool in expectations.damagedSpools {
                probes[spool] = await SpoolProbe.read(root + "/" + base.spoolsPath + "/" + spool)
            }
            let (first, added, cut) = try await firstOpen(
                root: root, base: base, expectations: expectations, probes: probes, configuration: configuration)
            let store: LogOutboxStore
            do {
                store = try await LogOutboxStore.open(root: FilePath(root), partition: StoreBase.partition, configuration: configuration)
            } catch {
                throw Violation("after a clean close, the reopen failed: \(error)")
            }
            do {
                let again = try await store.entries(matching: .all)
                let expected = first.merging([added.id: added]) { old, _ in old }
                if Set(again.map(\.id)) != Set(expected.keys) {
                    throw Violation(
                        "reopened, it holds other entries: \(Set(again.map(\.id)).symmetricDifference(expected.keys).prefix(4))")
                }
                for entry in again where !same(entry, expected[entry.id]!) {
                    throw Violation("reopened, \(entry.id) reads back other fields")
                }
                if !expectations.damagedPayloads.isEmpty {
                    try await StorePayloadDrain.check(store, base: base, expectations: expectations, first: first)
                }
                try await store.close()
            } catch {
                try? await store.close()
                throw error
            }
            let gone = try await Blocking.run { expectations.kept.filter { !FileManager.default.fileExists(atPath: root + "/" + $0) } }
            if let path = gone.first { throw Violation("\(path), which no store wrote, was deleted") }
            return .passed(first.count, notServed: cut)
        } catch let violation as Violation {
            return .violation(violation.detail)
        } catch {
            return .violation("\(error)")
        }
    }

    /// The owner's open of the damaged copy, its checks, and a write.
    /// Returns what it held and the entry it took.
    private static func firstOpen(
        root: String, base: StoreBase, expectations: StoreExpectations, probes: [String: SpoolProbe],
        configuration: OutboxStoreConfiguration
    ) async throws -> ([OutboxEntry.ID: OutboxEntry], OutboxEntry, Int) {
        let store: LogOutboxStore
        do {
            store = try await LogOutboxStore.open(root: FilePath(root), partition: StoreBase.partition, configuration: configuration)
        } catch {
            throw Violation("the owner's open failed: \(error)")
        }
        do {
            let listed = try await store.entries(matching: .all)
            let entries = Dictionary(listed.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            if entries.count != listed.count { throw Violation("an entry is listed twice") }
            let cut = try StoreAcknowledged(base: base, expectations: expectations).check(
                entries, report: store.spoolReportAtOpen, probes: probes)
            try await checkRest(store, entries: entries, base: base, expectations: expectations)
            let request = OutboxEnqueueRequest(
                type: StoreBase.types[0], method: "POST", endpoint: "/store/after-damage", payload: Array("after".utf8))
            guard case .enqueued(let added) = try await store.enqueue(request) else {
                throw Violation("the queue did not take a new write")
            }
            try await store.close()
            return (entries, added, cut)
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Completions, set-aside records, `payloads/` strays, intact payload files.
    private static func checkRest(
        _ store: LogOutboxStore, entries: [OutboxEntry.ID: OutboxEntry], base: StoreBase, expectations: StoreExpectations
    ) async throws {
        for id in base.delivered where try await store.completion(of: id) == nil {
            throw Violation("delivered entry \(id) lost its completion")
        }
        let forged = expectations.forged.filter(\.forgery.mustBeSetAside).count
        let setAside = try await store.setAsideRecords()
        if setAside.count < forged { throw Violation("\(forged) forged record(s), \(setAside.count) set aside") }
        let recovery = store.payloadRecovery
        for name in expectations.payloadStrays where !(recovery.removedOrphans + recovery.movedAside).contains(name) {
            throw Violation("payloads/\(name) was not reported (\(recovery))")
        }
        for (id, _) in base.payloadFiles where !expectations.damagedPayloads.contains(id) {
            guard let large = entries[id]?.largePayload else { throw Violation("\(id) lost its payload file") }
            let bytes: [UInt8]
            do { bytes = try await large.bytes() } catch { throw Violation("\(id)'s intact payload file does not read: \(error)") }
            if bytes != base.live[id]?.payload { throw Violation("\(id)'s payload file reads back other bytes") }
        }
    }

    /// Whether `entry` has the fields of `other` that its writer gave.
    static func same(_ entry: OutboxEntry, _ other: OutboxEntry) -> Bool {
        entry.type == other.type && entry.endpoint == other.endpoint && entry.payload == other.payload
            && (entry.largePayload?.sha256 == other.largePayload?.sha256)
    }

    static func same(_ entry: OutboxEntry, _ written: StoreBase.Written) -> Bool {
        guard entry.type == written.type, entry.endpoint == written.endpoint else { return false }
        guard let large = entry.largePayload else { return entry.payload == written.payload }
        return entry.payload.isEmpty && large.count == written.payload.count
    }
}
