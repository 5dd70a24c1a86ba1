import OutboxLog
import OutboxLogTesting
import OutboxQueue
import SystemPackage
import Testing

/// Random appends, reads, commits and rewinds against a model, with the
/// process killed or the power cut between them, on the simulated file
/// system. After each restart: every element acknowledged at the level the
/// crash keeps is there, in order, with its bytes, and nothing else is; a
/// consumer resumes at or after its last kept commit, never past its last
/// attempted one, and reads on from there without skipping an element.
@Suite("Queue: a model through crashes")
struct QueueCrashModelTests {
    struct Appended {
        var text: String
        var position: QueuePosition
        var durability: Durability
    }

    static func rank(_ durability: Durability) -> Int {
        switch durability {
        case .buffered: 0
        case .written: 1
        case .durable: 2
        }
    }

    @Test("appends, reads and commits through kills and power losses agree with the model", arguments: [1, 2, 3, 4] as [UInt64])
    func model(seed: UInt64) async throws {
        print("queue crash model: seed \(seed)")
        var random = SplitMix64(seed: seed)
        let disk = SimulatedFileSystem(directories: ["/data"])
        var configuration = QueuePowerLossTests.configuration(disk)
        configuration.elements.segmentSize = 4096
        configuration.consumers.segmentSize = 4096
        let directory: FilePath = "/data/queue"
        var queue = try await DurableQueue.open(at: directory, configuration: configuration)
        var appended: [Appended] = []
        var counter = 0
        // The consumer's commits: the last acknowledged at each level, and the last attempted.
        var keptCommit: [Durability: QueuePosition] = [:]
        var attempted: QueuePosition?
        var consumer = try await queue.consumer(named: "model")
        var read: [QueueElement] = []
        var audits = 0
        for step in 0..<300 {
            switch random.next() % 10 {
            case 0...2:
                let count = Int(random.next() % 3) + 1
                // Mostly not durable: a durable commit must then sync them.
                let durability = [Durability.buffered, .buffered, .written, .written, .durable][Int(random.next() % 5)]
                let texts = (0..<count).map { _ in counter += 1; return "element-\(counter)" }
                let last = try await queue.append(contentsOf: texts.map(bytes), durability: durability)
                for (offset, text) in texts.enumerated() {
                    // Positions in a batch are the last one's and those before it.
                    let position = QueuePosition(rawValue: last.rawValue - UInt64(texts.count - 1 - offset))
                    appended.append(Appended(text: text, position: position, durability: durability))
                }
            case 3...5:
                // Reads outpace appends, so commits reach elements not yet durable.
                read += try await consumer.next(max: Int(random.next() % 8) + 1)
            case 6...7:
                guard let newest = read.last?.position, newest > (attempted ?? QueuePosition(rawValue: 0)) else { continue }
                let durability = [Durability.buffered, .written, .durable, .durable][Int(random.next() % 4)]
                try await consumer.commit(through: newest, durability: durability)
                attempted = newest
                for level in Durability.allCases where Self.rank(level) <= Self.rank(durability) { keptCommit[level] = newest }
            case 8:
                consumer.rewind()
                read = []
            default:
                let powerLoss = random.next() % 2 == 0
                let kept: Durability = powerLoss ? .durable : .written
                if powerLoss { disk.simulatePowerLoss(.dropUnsynced) } else { disk.simulateProcessCrash() }
                _ = try? await queue.close()
                queue = try await DurableQueue.open(at: directory, configuration: configuration)
                audits += 1
                let survivors = try await drain(try await queue.consumer(named: "audit-\(audits)"))
                try check(survivors, against: appended, kept: kept, step: step, seed: seed)
                appended = appended.filter { element in survivors.contains { $0.position == element.position } }
                consumer = try await queue.consumer(named: "model")
                let committed = consumer.committed
                if let floor = keptCommit[kept] { #expect(committed.map { $0 >= floor } == true, "seed \(seed) step \(step): commit went back") }
                #expect(committed.map { value in attempted.map { value <= $0 } ?? false } ?? true, "seed \(seed) step \(step): a commit was invented")
                let next = try await consumer.next(max: 1)
                let expected = appended.first { $0.position > (committed ?? QueuePosition(rawValue: 0)) }
                #expect(next.first?.position == expected?.position, "seed \(seed) step \(step): resumed at the wrong element")
                consumer.rewind()
                read = []
                attempted = committed
                keptCommit = committed.map { [.buffered: $0, .written: $0, .durable: $0] } ?? [:]
            }
        }
        try await queue.close()
    }

    private func check(_ survivors: [QueueElement], against appended: [Appended], kept: Durability, step: Int, seed: UInt64) throws {
        let byPosition = Dictionary(uniqueKeysWithValues: appended.map { ($0.position, $0) })
        for element in survivors {
            let original = byPosition[element.position]
            #expect(original?.text == String(decoding: element.bytes, as: UTF8.self), "seed \(seed) step \(step): invented \(element)")
        }
        let surviving = Set(survivors.map(\.position))
        for element in appended where Self.rank(element.durability) >= Self.rank(kept) {
            #expect(surviving.contains(element.position), "seed \(seed) step \(step): lost \(element.text), acknowledged \(element.durability)")
        }
        #expect(zip(survivors, survivors.dropFirst()).allSatisfy { $0.position < $1.position })
    }
}
