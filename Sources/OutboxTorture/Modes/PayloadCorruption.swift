import Foundation
import Logging
import Outbox
import OutboxLocking
import OutboxLogTesting
import SystemPackage

/// The corruption half of the payload mode: a closed queue's payload file is
/// damaged, the queue reopened and drained in this process by a handler
/// that knows every body. The open must succeed; the damaged entry must be
/// quarantined with a typed reason (at the open when the file is missing or
/// has another size, before its attempt otherwise) and never handed to the
/// handler; every other entry must be delivered with exactly its bytes;
/// discarding the damaged entry must leave `payloads/` empty.
enum PayloadCorruption {
    enum Damage: String, CaseIterable {
        case flipBit = "bit flipped"
        case zeroPage = "page zeroed"
        case cutShort = "cut short"
        case grown = "grown"
        case deleted = "deleted"
        case anotherEntrys = "replaced by another entry's"
        case renamed = "renamed"
    }

    /// One corruption cycle; `false` after a violation.
    static func cycle(_ cycle: Int, root: FilePath, options: TortureOptions, report: inout TortureReport) async -> Bool {
        let directory = root.appending("cycle-\(cycle)")
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5041_5943_0000_0000 | UInt64(cycle))
        return await TortureCycle(.payload, seed: options.seed, cycle: cycle).run(in: directory, report: &report) {
            (report: inout TortureReport) async throws(CycleViolation) in
            let damage = Damage.allCases[(cycle / 2) % Damage.allCases.count]
            var job = PayloadWorker.Job(
                root: directory, baseURL: URL(string: "http://127.0.0.1:1")!, seed: options.seed, cycle: cycle, count: 3)
            job.encrypted = options.encrypted || (cycle / 2 / Damage.allCases.count) % 2 == 1
            let queue = try await buildQueue(job, &random)
            report.count(.payload) { $0.acknowledged += 3 }
            let victim = try await damageOne(queue, with: damage, &random)
            report.count(.payload) { $0.faults += 1 }
            try await drainAndCheck(queue, victim: victim, damage: damage, job: job)
            report.detail(.payload, "\(damage.rawValue): quarantined before sending")
            report.count(.payload) {
                $0.cycles += 1
                $0.recovered += 3
            }
            await Blocking.remove(directory.string)
        }
    }

    /// A closed queue of three uploads, each in its payload file.
    struct Queue {
        var bodies: [OutboxEntry.ID: [UInt8]] = [:]
        var files: [OutboxEntry.ID: FilePath] = [:]
        /// The entries, in a fixed order.
        var ids: [OutboxEntry.ID] { bodies.keys.sorted { $0.description < $1.description } }
    }

    /// Enqueues three uploads of one size, so that a file replaced by
    /// another entry's is not caught by its size, and closes the queue.
    static func buildQueue(_ job: PayloadWorker.Job, _ random: inout SplitMix64) async throws(CycleViolation) -> Queue {
        let size = 5_000 + random.next(below: 300_000)
        var queue = Queue()
        do {
            let store = try await LogOutboxStore.open(
                root: job.root, partition: PayloadWorker.partition, configuration: PayloadWorker.configuration(job))
            for index in 0..<3 {
                let body = Array(PayloadWorker.marker(seed: job.seed, cycle: job.cycle, index: index).utf8)
                let bytes = body + random.nextBytes(size - body.count)
                let request = OutboxEnqueueRequest(type: "torture_upload", method: "POST", endpoint: "/uploads", payload: bytes)
                guard case .enqueued(let entry) = try await store.enqueue(request), let file = entry.largePayload?.file else {
                    throw CycleViolation("an upload of \(size) bytes did not go to a payload file")
                }
                queue.bodies[entry.id] = bytes
                queue.files[entry.id] = file
            }
            try await store.close()
        } catch let violation as CycleViolation {
            throw violation
        } catch {
            throw CycleViolation("cannot build the queue: \(error)")
        }
        return queue
    }

    /// Damages one entry's payload file; returns that entry.
    static func damageOne(
        _ queue: Queue, with damage: Damage, _ random: inout SplitMix64
    ) async throws(CycleViolation) -> OutboxEntry.ID {
        let ids = queue.ids
        let victim = ids[random.next(below: ids.count)]
        let other = ids.first { $0 != victim }!
        do {
            let (victimFile, otherFile) = (queue.files[victim]!, queue.files[other]!)
            // The damage draws from a copy: the cycle's own draws go on unchanged.
            try await Blocking.run { [random] in
                var random = random
                try apply(damage, to: victimFile, other: otherFile, &random)
            }
        } catch {
            throw CycleViolation("cannot damage the file: \(error)")
        }
        return victim
    }

    /// Reopens and drains the queue with a handler that knows every body:
    /// the damaged entry quarantined, never sent; every other delivered
    /// with its bytes; nothing left in `payloads/` once it is discarded.
    static func drainAndCheck(
        _ queue: Queue, victim: OutboxEntry.ID, damage: Damage, job: PayloadWorker.Job
    ) async throws(CycleViolation) {
        let store: LogOutboxStore
        do {
            store = try await LogOutboxStore.open(
                root: job.root, partition: PayloadWorker.partition, configuration: PayloadWorker.configuration(job))
        } catch {
            throw CycleViolation("the open refused a queue whose payload file was \(damage.rawValue): \(error)")
        }
        let wrong = await drain(store, expecting: queue.bodies)
        do {
            defer { Task { try? await store.close() } }
            if let sent = wrong.first { throw CycleViolation("\(damage.rawValue): a wrong body was sent: \(sent)") }
            let entry = try await store.entry(victim)
            guard entry?.status == .quarantined, entry?.lastFailure?.cause == .payloadFileDamaged else {
                throw CycleViolation(
                    "\(damage.rawValue): the damaged entry is \(entry.map { "\($0.status): \($0.lastFailure.map(String.init(describing:)) ?? "")" } ?? "gone")")
            }
            for id in queue.ids where id != victim {
                guard try await store.completion(of: id) != nil else {
                    throw CycleViolation("\(damage.rawValue): an intact entry was not delivered")
                }
            }
            _ = try await store.discard(victim)
            try await store.close()
            let left = try await Blocking.run { [root = job.root.string] in try payloadFiles(under: root) }
            if !left.isEmpty { throw CycleViolation("\(damage.rawValue): files left after every entry ended: \(left)") }
        } catch let violation as CycleViolation {
            throw violation
        } catch {
            throw CycleViolation("\(damage.rawValue): cannot check the queue: \(error)")
        }
    }

    /// Drains `store` in this process; returns the deliveries whose body was not `expected`.
    static func drain(_ store: LogOutboxStore, expecting expected: [OutboxEntry.ID: [UInt8]]) async -> [String] {
        let wrong = Locked<[String]>([])
        let handler = ClosureOutboxHandler { delivery in
            let body = try await delivery.loadPayload()
            if body != expected[delivery.id] { wrong.withLock { $0.append("\(delivery.id) got \(body.count) other bytes") } }
            return .delivered(serverID: nil)
        }
        var dispatching = OutboxDispatcherConfiguration()
        dispatching.logger = Logger(label: "outbox.torture", factory: { _ in SwiftLogNoOpLogHandler() })
        let dispatcher = OutboxDispatcher(store: store, handlers: ["torture_upload": handler], configuration: dispatching)
        _ = await dispatcher.drain(until: Date().addingTimeInterval(60))
        await dispatcher.stop()
        return wrong.withLock { $0 }
    }

    /// Damages the file at `path` (`other` is another entry's file of the same size).
    static func apply(_ damage: Damage, to path: FilePath, other: FilePath, _ random: inout SplitMix64) throws {
        let url = URL(fileURLWithPath: path.string)
        var bytes = try Data(contentsOf: url)
        switch damage {
        case .flipBit:
            bytes[random.next(below: bytes.count)] ^= UInt8(1 << random.next(below: 8))
        case .zeroPage:
            let start = random.next(below: bytes.count)
            let end = min(bytes.count, start + 4096)
            let before = bytes[start..<end]
            bytes.replaceSubrange(start..<end, with: Data(repeating: 0, count: end - start))
            if before.allSatisfy({ $0 == 0 }) { bytes[start] = 1 }
        case .cutShort:
            bytes = bytes.prefix(random.next(below: bytes.count))
        case .grown:
            bytes += Data(random.nextBytes(1 + random.next(below: 100)))
        case .deleted:
            try FileManager.default.removeItem(at: url)
            return
        case .anotherEntrys:
            bytes = try Data(contentsOf: URL(fileURLWithPath: other.string))
        case .renamed:
            try FileManager.default.moveItem(at: url, to: url.deletingLastPathComponent().appendingPathComponent(String(repeating: "f", count: 32)))
            return
        }
        try bytes.write(to: url)
    }

    /// Every file in the `payloads/` directories of the queues under `root`.
    static func payloadFiles(under root: String) throws -> [String] {
        let partitions = root + "/partitions"
        guard FileManager.default.fileExists(atPath: partitions) else { return [] }
        var found: [String] = []
        for queue in try FileManager.default.contentsOfDirectory(atPath: partitions) {
            let payloads = partitions + "/" + queue + "/payloads"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: payloads)) ?? [] { found.append(queue + "/payloads/" + name) }
        }
        return found.sorted()
    }
}
