import Foundation
import Logging
import Outbox
import OutboxLog
import OutboxLogTesting
import SystemPackage

/// The corrupt mode on encrypted stores (`outbox torture --mode corrupt
/// --encrypted`): the same damages (bit flips, truncations, zeroed pages,
/// garbage, deleted or duplicated segments, foreign headers) applied to a
/// copy of a real sealed queue, then opened by `LogOutboxStore` with its key,
/// strict and then salvage.
///
/// Every open must return (never crash or hang), either refusing with a
/// typed ``OutboxError`` or opening; a queue that opens must hand back only
/// entries that were written, each with exactly its fields — a damaged
/// sealed record must be refused, never decrypted into something else —
/// and no app text may appear in the damaged files' plaintext parts.
enum SealedStoreCorruption {
    static let partition = "sealed-torture"

    /// A real sealed queue: its directory's files and what was written.
    struct Base: Sendable {
        var queueName: String
        var files: [String: [UInt8]]
        /// id → (type, endpoint, payload) of every entry written.
        var written: [OutboxEntry.ID: Written]
    }

    struct Written: Sendable, Hashable {
        var type: String
        var endpoint: String
        var payload: [UInt8]
    }

    static func configuration(_ options: TortureOptions, recovery: OutboxLog.Configuration.RecoveryMode) -> OutboxStoreConfiguration {
        var configuration = OutboxStoreConfiguration()
        configuration.log = TortureLogConfiguration.make(recovery: recovery)
        configuration.log.createIfMissing = false
        try? configuration.setEncryptionKey(OutboxWorker.encryptionKey(seed: options.seed))
        return configuration
    }

    /// Writes entries (some delivered, some failed) into a fresh sealed
    /// queue under `root` and reads its files back.
    static func makeBase(_ options: TortureOptions, number: Int, root: String) async throws -> Base {
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5345_414C_0000_0000 | UInt64(number))
        try await Blocking.freshDirectory(root)
        var configuration = configuration(options, recovery: .strict)
        configuration.log.createIfMissing = true
        configuration.log.segmentSize = 4096 * (1 + random.next(below: 4))
        let store = try await LogOutboxStore.open(root: FilePath(root), partition: partition, configuration: configuration)
        var written: [OutboxEntry.ID: Written] = [:]
        for index in 0..<(8 + random.next(below: 40)) {
            let value = Written(
                type: "sealed-type-\(index % 5)", endpoint: "/sealed/\(number)/\(index)",
                payload: random.nextBytes(1 + random.next(below: 600)))
            let id = try await store.enqueue(
                OutboxEnqueueRequest(
                    type: value.type, method: "POST", endpoint: value.endpoint, payload: value.payload,
                    scope: "scope-\(index % 3)")
            ).id
            written[id] = value
            if random.next(below: 4) == 0 {
                _ = try? await store.beginAttempt(id, at: Date(), lease: .seconds(30))
                _ = try? await store.recordFailure(
                    id, OutboxFailure(.transient, httpStatus: 500, message: "failed-\(index)"), retryAt: Date())
            }
        }
        try await store.close()
        let partitions = root + "/partitions"
        let allWritten = written
        return try await Blocking.run {
            guard let queueName = try FileManager.default.contentsOfDirectory(atPath: partitions).first else {
                throw OutboxError(.notFound, "the sealed base queue has no directory")
            }
            var files: [String: [UInt8]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: partitions + "/" + queueName) {
                files[name] = Array(try Data(contentsOf: URL(fileURLWithPath: partitions + "/" + queueName + "/" + name)))
            }
            return Base(queueName: queueName, files: files, written: allWritten)
        }
    }

    /// One damaged copy of `base`, opened strict and then salvage.
    static func `case`(
        _ cycle: Int, base: Base, root: String, options: TortureOptions, report: inout TortureReport
    ) async {
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5345_434F_0000_0000 | UInt64(cycle))
        var files = base.files
        var damages: [Damage] = []
        for _ in 0..<(random.next(below: 5) == 0 ? 2 : 1) {
            guard let damage = Damage.draw(files: files, foreign: base.files, &random) else { break }
            damage.apply(to: &files, foreign: base.files, &random)
            damages.append(damage)
        }
        report.count(.corrupt) { $0.faults += damages.count }
        let context = "sealed store, " + damages.map(\.description).joined(separator: "; ")
        for mode in [OutboxLog.Configuration.RecoveryMode.strict, .salvage] {
            do { try await BaseLog.write(files, to: root + "/partitions/" + base.queueName) } catch {
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "cannot write the damaged sealed copy: \(error)")
                return
            }
            let configuration = configuration(options, recovery: mode)
            let outcome = await Deadline.run(CorruptTorture.hangLimit) {
                await openAndCheck(root: root, configuration: configuration, base: base)
            }
            switch outcome {
            case nil:
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "\(context): the \(mode) open hung")
                return
            case .refused(let code)?:
                report.detail(.corrupt, "sealed \(mode) opens refused (\(code))")
            case .opened(let count)?:
                report.detail(.corrupt, "sealed \(mode) opens recovered")
                report.count(.corrupt) { $0.recovered += count }
            case .violation(let detail)?:
                report.violation(.corrupt, seed: options.seed, cycle: cycle, "\(context): \(mode) open: \(detail)")
                return
            }
        }
        report.count(.corrupt) { $0.cycles += 1 }
    }

    static func openAndCheck(root: String, configuration: OutboxStoreConfiguration, base: Base) async -> CorruptTorture.Outcome {
        let store: LogOutboxStore
        do {
            store = try await LogOutboxStore.open(root: FilePath(root), partition: partition, configuration: configuration)
        } catch {
            return .refused(WorkerLine.word(error.code))
        }
        let entries: [OutboxEntry]
        do { entries = try await store.entries(matching: .all) } catch {
            // A record damaged past the open: refused when read, typed.
            try? await store.close()
            return .refused("read " + WorkerLine.word(error.code))
        }
        try? await store.close()
        for entry in entries {
            guard let written = base.written[entry.id] else { return .violation("an entry no step wrote: \(entry.id)") }
            let read = Written(type: entry.type, endpoint: entry.endpoint, payload: entry.payload)
            if read != written { return .violation("entry \(entry.id) reads back different fields than were written") }
        }
        return .opened(entries.count)
    }
}
