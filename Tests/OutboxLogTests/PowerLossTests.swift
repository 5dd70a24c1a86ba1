import OutboxLocking
import OutboxLog
import OutboxLogTesting
import SystemPackage
import Testing

/// Power loss through the simulated file system: whatever was not synced
/// may vanish, land in part, land out of order or leave garbage — and the
/// log must still open (strict), keep every `durable` acknowledgement, and
/// come back as a prefix of its history, with no hole.
@Suite("Simulated power loss")
struct PowerLossTests {
    enum Operation {
        case put(LogKey, [UInt8], Durability)
        case annotate(LogKey, [UInt8], Durability)
        case delete(LogKey, Durability)

        var durability: Durability {
            switch self {
            case .put(_, _, let d), .annotate(_, _, let d), .delete(_, let d): d
            }
        }

        func apply(to model: inout LogModel) {
            switch self {
            case .put(let key, let value, _): model[key] = (value, nil)
            case .annotate(let key, let note, _): model[key]?.annotation = note
            case .delete(let key, _): model[key] = nil
            }
        }
    }

    /// A random history; `models[j]` is the state after its first `j` operations.
    static func history(seed: UInt64, count: Int) -> (operations: [Operation], models: [LogModel]) {
        var random = SplitMix64(seed: seed)
        var operations: [Operation] = []
        var models: [LogModel] = [[:]]
        var model: LogModel = [:]
        for i in 0..<count {
            let key = LogKey("k\(random.next(below: 17))")
            let roll = random.next(below: 10)
            let durability: Durability = roll < 4 ? .buffered : roll < 8 ? .written : .durable
            let operation: Operation
            if model[key] != nil && random.next(below: 6) == 0 {
                operation = .delete(key, durability)
            } else if model[key] != nil && random.next(below: 5) == 0 {
                operation = .annotate(key, .pattern(8, seed: i), durability)
            } else {
                operation = .put(key, .pattern(20 + Int(random.next(below: 300)), seed: i), durability)
            }
            operation.apply(to: &model)
            operations.append(operation)
            models.append(model)
        }
        return (operations, models)
    }

    /// Every live entry, read once.
    static func contents(of log: OutboxLog) async throws -> [LogKey: ([UInt8], [UInt8]?)] {
        var result: [LogKey: ([UInt8], [UInt8]?)] = [:]
        for key in log.keys {
            let entry = try #require(try await log.get(key))
            result[key] = (entry.value, entry.annotation?.payload)
        }
        return result
    }

    static func same(_ recovered: [LogKey: ([UInt8], [UInt8]?)], _ model: LogModel) -> Bool {
        guard recovered.count == model.count else { return false }
        for (key, entry) in model {
            guard let found = recovered[key], found.0 == entry.value, found.1 == entry.annotation else { return false }
        }
        return true
    }

    @Test("after power loss the log is a prefix of its history that includes every durable acknowledgement",
          arguments: 0..<10)
    func prefixAfterPowerLoss(seed: UInt64) async throws {
        let (operations, models) = Self.history(seed: seed, count: 120)
        var random = SplitMix64(seed: seed &+ 1000)
        let crashAfter = 20 + Int(random.next(below: operations.count - 20))

        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 4096))
        var durablyCovered = 0
        for (index, operation) in operations[..<crashAfter].enumerated() {
            switch operation {
            case .put(let key, let value, let durability): try await log.put(key, value, durability: durability)
            case .annotate(let key, let note, let durability): try await log.annotate(key, note, durability: durability)
            case .delete(let key, let durability): _ = try await log.delete(key, durability: durability)
            }
            if operation.durability == .durable { durablyCovered = index + 1 }
        }
        let frozen = disk.snapshot()  // the machine dies here, log still open

        for mode in PowerLossMode.allCases {
            let machine = frozen.snapshot()
            let loss = machine.simulatePowerLoss(mode, seed: seed)
            let context = "seed \(seed), crash after \(crashAfter), \(mode): \(loss)"
            let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(machine, segmentSize: 4096))
            let contents = try await Self.contents(of: recovered)
            let prefixes = (durablyCovered...crashAfter).filter { Self.same(contents, models[$0]) }
            #expect(!prefixes.isEmpty, "not a prefix of the history covering every durable ack (\(durablyCovered)...\(crashAfter)); \(context)")
            // The log keeps working after recovery.
            try await recovered.put("after", [1], durability: .durable)
            try await recovered.close()
            let again = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(machine, segmentSize: 4096))
            #expect(again.recoveryReport.isClean, "\(context): \(again.recoveryReport)")
            try await again.close()
        }
        try await log.close()
    }

    @Test("concurrent durable appends acknowledged before a power loss all survive it", arguments: 0..<4)
    func groupCommitSurvivesPowerLoss(seed: UInt64) async throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk, segmentSize: 16384))
        let acknowledged = Locked<[LogKey: [UInt8]]>([:])
        let frozen = Locked<SimulatedFileSystem?>(nil)
        let acknowledgedAtCrash = Locked<[LogKey: [UInt8]]>([:])
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<16 {
                group.addTask {
                    for i in 0..<40 {
                        let key = LogKey("p\(producer)-\(i)")
                        let value = [UInt8].pattern(64, seed: producer * 100 + i)
                        guard (try? await log.put(key, value, durability: .durable)) != nil else { return }
                        acknowledged.withLock { $0[key] = value }
                        if producer == Int(seed % 16) && i == 20 {
                            // Everything acknowledged so far is synced: freeze the disk now.
                            let acks = acknowledged.value
                            let image = disk.snapshot()
                            frozen.withLock { $0 = image }
                            acknowledgedAtCrash.withLock { $0 = acks }
                        }
                    }
                }
            }
        }
        try await log.close()
        let machine = try #require(frozen.value)
        machine.simulatePowerLoss(.reorder, seed: seed)
        let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(machine, segmentSize: 16384))
        let acks = acknowledgedAtCrash.value
        #expect(acks.count >= 21)
        for (key, value) in acks { #expect(try await recovered.get(key)?.value == value, "\(key)") }
        try await recovered.close()
    }
}
