import CLITestSupport
import Foundation
import OutboxLog
import OutboxLogTesting
import PropertyBased
import SystemPackage
import Testing

/// Retention across crashes and against a model: a removal is all or
/// nothing, and a key is only ever gone because its record had expired.
@Suite("Retention: crashes and a model", .propertySeedFromEnvironment)
struct RetentionCrashTests {
    /// A cleanly closed log on `disk`: expired keys over several segments,
    /// then keys that never expire.
    static func expiredLog(on disk: SimulatedFileSystem) async throws -> (all: Set<LogKey>, kept: Set<LogKey>) {
        let log = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
        let expired = try await RetentionTests.fill(log, "old", count: 60, expiresAt: RetentionTests.at(10))
        let kept = try await RetentionTests.fill(log, "new", count: 10, expiresAt: nil)
        try await log.close()
        return (Set(expired + kept), Set(kept))
    }

    @Test(
        "a crash before any file operation of a retention leaves every segment or removes the whole run",
        arguments: [nil, PowerLossMode.dropUnsynced, .keepRandomPrefix, .tearLastWrite, .reorder])
    func crashAtEveryRetentionStep(powerLoss: PowerLossMode?) async throws {
        let pristine = SimulatedFileSystem(directories: ["/data"])
        let keys = try await Self.expiredLog(on: pristine)

        // A dry run on a copy counts the operations and gives the result.
        let counter = CrashingFileSystem(base: pristine.snapshot(), crashAt: nil)
        let dry = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(counter))
        let opening = counter.mutatingCalls
        let report = try await dry.removeExpired(now: RetentionTests.at(11))
        let steps = counter.mutatingCalls - opening
        let after = Set(dry.keys)
        try await dry.close()
        #expect(report.segmentsRemoved >= 2 && steps >= 4, "\(report), \(steps) operations")

        var outcomes: [Bool: Int] = [:]
        for step in 1...steps {
            let disk = pristine.snapshot()
            let victim = CrashingFileSystem(base: disk, crashAt: opening + step)
            let running = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(victim))
            await #expect(throws: OutboxLogError.self, "step \(step)") { try await running.removeExpired(now: RetentionTests.at(11)) }
            if let powerLoss { disk.simulatePowerLoss(powerLoss, seed: UInt64(step)) } else { disk.simulateProcessCrash() }
            let context = "crash before retention step \(step) of \(steps), \(powerLoss.map { "\($0)" } ?? "process crash")"
            let recovered = try await OutboxLog.open(at: simulatedLogDirectory, configuration: simulatedConfiguration(disk))
            let found = Set(recovered.keys)
            #expect(found == keys.all || found == after, "\(context): \(found.count) keys")
            outcomes[found == after, default: 0] += 1
            #expect(found.isSuperset(of: keys.kept), "\(context)")
            for key in keys.kept { #expect(try await recovered.get(key) != nil, "\(context): \(key)") }
            #expect(!disk.allFiles().contains { $0.lastComponent?.string == "COMPACTION" }, "\(context)")
            try await recovered.close()
            withExtendedLifetime(running) {}
        }
        if powerLoss == nil {
            // Both sides of the commit point were hit.
            #expect(outcomes[true, default: 0] > 0 && outcomes[false, default: 0] > 0, "\(outcomes)")
        }
    }

    enum Operation: Sendable, CustomStringConvertible {
        /// Expires at `expiry` seconds, or never.
        case put(key: Int, expiry: Int?)
        case annotate(key: Int, expiry: Int?)
        case delete(key: Int)
        case removeExpired(now: Int)
        case compact
        case reopen

        var description: String {
            switch self {
            case .put(let key, let expiry): "put(k\(key), \(expiry.map(String.init) ?? "never"))"
            case .annotate(let key, let expiry): "annotate(k\(key), \(expiry.map(String.init) ?? "never"))"
            case .delete(let key): "delete(k\(key))"
            case .removeExpired(let now): "removeExpired(\(now))"
            case .compact: "compact"
            case .reopen: "reopen"
            }
        }
    }

    static let expiry = Gen<Int?>.frequency((4, Gen.int(in: 0...100).map { Optional($0) }), (1, Gen.always(nil)))
    static let operation = Gen<Operation>.frequency(
        (8, zip(Gen.int(in: 0...15), expiry).map { Operation.put(key: $0, expiry: $1) }),
        (2, zip(Gen.int(in: 0...15), expiry).map { Operation.annotate(key: $0, expiry: $1) }),
        (2, Gen.int(in: 0...15).map { Operation.delete(key: $0) }),
        (2, Gen.int(in: 0...120).map { Operation.removeExpired(now: $0) }),
        (1, Gen.always(Operation.compact)),
        (1, Gen.always(Operation.reopen))
    )

    /// What the model knows of a key: its value and annotation, and when
    /// each expires (`nil`: never).
    struct Expected {
        var value: [UInt8]
        var valueExpiry: Int?
        var annotation: [UInt8]?
        var annotationExpiry: Int?
    }

    @Test("random puts, annotations, deletes, retentions, compactions and reopens: a key is gone only if it had expired")
    func agreesWithModel() async throws {
        await propertyCheck(count: modelCases(30), input: Self.operation.array(of: 1...120)) { operations in
            let directory = TemporaryDirectory()
            var configuration = smallSegments(1024)
            configuration.indexCheckpoints = true
            var log = try await OutboxLog.open(at: directory.path, configuration: configuration)
            var model: [LogKey: Expected] = [:]
            var latestNow = Int.min
            for (counter, operation) in operations.enumerated() {
                switch operation {
                case .put(let key, let expiry):
                    let value = [UInt8].pattern(100, seed: counter)
                    try await log.put(LogKey("k\(key)"), value, expiresAt: expiry.map { RetentionTests.at(Double($0)) }, durability: .written)
                    model[LogKey("k\(key)")] = Expected(value: value, valueExpiry: expiry)
                case .annotate(let key, let expiry):
                    guard log.contains(LogKey("k\(key)")) else { continue }
                    let note = [UInt8].pattern(20, seed: counter)
                    try await log.annotate(LogKey("k\(key)"), note, expiresAt: expiry.map { RetentionTests.at(Double($0)) }, durability: .written)
                    model[LogKey("k\(key)")]?.annotation = note
                    model[LogKey("k\(key)")]?.annotationExpiry = expiry
                case .delete(let key):
                    try await log.delete(LogKey("k\(key)"), durability: .written)
                    model[LogKey("k\(key)")] = nil
                case .removeExpired(let now):
                    try await log.removeExpired(now: RetentionTests.at(Double(now)))
                    latestNow = max(latestNow, now)
                case .compact:
                    try await log.compact()
                case .reopen:
                    try await log.close()
                    log = try await OutboxLog.open(at: directory.path, configuration: configuration)
                }
                // A key the log lost must have had its value expired by a
                // retention already run (its annotation dies with it); the
                // rest reads as the model says.
                for (key, expected) in model {
                    guard let entry = try await log.get(key) else {
                        #expect(expected.valueExpiry.map { $0 <= latestNow } == true, "\(key) lost after \(operation)")
                        model[key] = nil
                        continue
                    }
                    #expect(entry.value == expected.value, "\(key) after \(operation)")
                    #expect(entry.expiresAt == expected.valueExpiry.map { RetentionTests.at(Double($0)) }, "\(key) after \(operation)")
                    #expect(entry.annotation?.payload == expected.annotation, "\(key) annotation after \(operation)")
                    #expect(
                        entry.annotation?.expiresAt == expected.annotationExpiry.map { RetentionTests.at(Double($0)) },
                        "\(key) annotation expiry after \(operation)")
                }
                #expect(Set(log.keys).isSubset(of: Set(model.keys)), "after \(operation)")
            }
            try await log.close()
        }
    }
}
