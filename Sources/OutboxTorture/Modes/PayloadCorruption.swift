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

    static func cycle(_ cycle: Int, root: FilePath, options: TortureOptions, report: inout TortureReport) async -> Bool {
        func violation(_ detail: String) -> Bool {
            report.violation(.payload, seed: options.seed, cycle: cycle, detail)
            return false
        }
        var random = SplitMix64.derived(seed: options.seed, stream: 0x5041_5943_0000_0000 | UInt64(cycle))
        let directory = root.appending("cycle-\(cycle)")
        do { try await Blocking.freshDirectory(directory.string) } catch { return violation("cannot prepare \(directory): \(error)") }
        let damage = Damage.allCases[(cycle / 2) % Damage.allCases.count]
        var job = PayloadWorker.Job(root: directory, baseURL: URL(string: "http://127.0.0.1:1")!, seed: options.seed, cycle: cycle, count: 3)
        job.encrypted = options.encrypted || (cycle / 2 / Damage.allCases.count) % 2 == 1
        let configuration = PayloadWorker.configuration(job)
        // Equal sizes: a file replaced by another entry's is not caught by its size.
        let size = 5_000 + random.next(below: 300_000)
        var bodies: [OutboxEntry.ID: [UInt8]] = [:]
        var files: [OutboxEntry.ID: FilePath] = [:]
        do {
            let store = try await LogOutboxStore.open(root: directory, partition: PayloadWorker.partition, configuration: configuration)
            for index in 0..<3 {
                let body = Array(PayloadWorker.marker(seed: options.seed, cycle: cycle, index: index).utf8)
                let bytes = body + random.nextBytes(size - body.count)
                let request = OutboxEnqueueRequest(type: "torture_upload", method: "POST", endpoint: "/uploads", payload: bytes)
                guard case .enqueued(let entry) = try await store.enqueue(request), let file = entry.largePayload?.file else {
                    return violation("an upload of \(size) bytes did not go to a payload file")
                }
                bodies[entry.id] = bytes
                files[entry.id] = file
            }
            try await store.close()
        } catch {
            return violation("cannot build the queue: \(error)")
        }
        report.count(.payload) { $0.acknowledged += 3 }
        let ids = bodies.keys.sorted { $0.description < $1.description }
        let victim = ids[random.next(below: ids.count)]
        let other = ids.first { $0 != victim }!
        do {
            let (victimFile, otherFile) = (files[victim]!, files[other]!)
            try await Blocking.run { [random] in
                var random = random
                try apply(damage, to: victimFile, other: otherFile, &random)
            }
        } catch {
            return violation("cannot damage the file: \(error)")
        }
        report.count(.payload) { $0.faults += 1 }

        let store: LogOutboxStore
        do {
            store = try await LogOutboxStore.open(root: directory, partition: PayloadWorker.partition, configuration: configuration)
        } catch {
            return violation("the open refused a queue whose payload file was \(damage.rawValue): \(error)")
        }
        let wrong = Locked<[String]>([])
        let expected = bodies
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
        do {
            defer { Task { try? await store.close() } }
            if let sent = wrong.withLock({ $0.first }) { return violation("\(damage.rawValue): a wrong body was sent: \(sent)") }
            let entry = try await store.entry(victim)
            guard entry?.status == .quarantined, entry?.lastFailure?.cause == .payloadFileDamaged else {
                return violation(
                    "\(damage.rawValue): the damaged entry is \(entry.map { "\($0.status): \($0.lastFailure.map(String.init(describing:)) ?? "")" } ?? "gone")")
            }
            for id in ids where id != victim {
                guard try await store.completion(of: id) != nil else { return violation("\(damage.rawValue): an intact entry was not delivered") }
            }
            _ = try await store.discard(victim)
            try await store.close()
            let left = try await Blocking.run { try payloadFiles(under: directory.string) }
            if !left.isEmpty { return violation("\(damage.rawValue): files left after every entry ended: \(left)") }
        } catch {
            return violation("\(damage.rawValue): cannot check the queue: \(error)")
        }
        report.detail(.payload, "\(damage.rawValue): quarantined before sending")
        report.count(.payload) {
            $0.cycles += 1
            $0.recovered += 3
        }
        await Blocking.remove(directory.string)
        return true
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
