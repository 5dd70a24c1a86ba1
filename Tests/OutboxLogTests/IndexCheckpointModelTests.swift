import CLITestSupport
import OutboxLog
import OutboxLogTesting
import PropertyBased
import SystemPackage
import Testing

/// The index checkpoint against the model and against a full scan: random
/// histories with checkpoints written often (a 4 KiB interval), compactions,
/// clean reopens and kills at any point; after each reopen — which loads the
/// checkpoint and the records after it, in the background or not — the log
/// must hold what the model holds, and the same live keys and live bytes as
/// an open of the same disk that reads every record.
@Suite("Index checkpoint model", .propertySeedFromEnvironment)
struct IndexCheckpointModelTests {
    enum Operation: Sendable, CustomStringConvertible {
        case put(key: Int, size: Int)
        case annotate(key: Int, size: Int)
        case delete(key: Int)
        case batch(keys: [Int], size: Int)
        case compact
        case reopen
        /// `kill -9` after everything was written (not synced).
        case kill

        var description: String {
            switch self {
            case .put(let key, let size): "put(k\(key), \(size)B)"
            case .annotate(let key, let size): "annotate(k\(key), \(size)B)"
            case .delete(let key): "delete(k\(key))"
            case .batch(let keys, let size): "batch(\(keys.map { "k\($0)" }), \(size)B)"
            case .compact: "compact"
            case .reopen: "reopen"
            case .kill: "kill"
            }
        }
    }

    static let operation = Gen<Operation>.frequency(
        (6, zip(Gen.int(in: 0...15), Gen.int(in: 0...600)).map { Operation.put(key: $0, size: $1) }),
        (2, zip(Gen.int(in: 0...15), Gen.int(in: 0...40)).map { Operation.annotate(key: $0, size: $1) }),
        (2, Gen.int(in: 0...15).map { Operation.delete(key: $0) }),
        (1, zip(Gen.int(in: 0...15).array(of: 1...4), Gen.int(in: 0...200)).map { Operation.batch(keys: $0, size: $1) }),
        (1, Gen.always(Operation.compact)),
        (1, Gen.always(Operation.reopen)),
        (2, Gen.always(Operation.kill))
    )

    static func configuration(_ disk: SimulatedFileSystem, checkpoints: Bool, deferred: Bool) -> OutboxLog.Configuration {
        var configuration = smallSegments()
        configuration.fileSystem = disk
        configuration.indexCheckpoints = checkpoints
        configuration.indexCheckpointInterval = 4096
        configuration.opensBeforeIndexIsLoaded = deferred
        return configuration
    }

    @Test("checkpoint and the records after it give the model's contents and a full scan's accounting")
    func agreesWithModelAndFullScan() async throws {
        let reopens = ReopenCounter()
        await propertyCheck(count: modelCases(40), input: zip(Gen.bool, Self.operation.array(of: 1...80))) { deferred, operations in
            let disk = SimulatedFileSystem(directories: ["/data"])
            let path = FilePath("/data/log")
            let configuration = Self.configuration(disk, checkpoints: true, deferred: deferred)
            var log = try await OutboxLog.open(at: path, configuration: configuration)
            var model: LogModel = [:]
            var counter = 0
            for operation in operations {
                counter += 1
                switch operation {
                case .put(let key, let size):
                    try await ModelWrites.put(log, &model, key: key, size: size, seed: counter, durability: .buffered)
                case .annotate(let key, let size):
                    let note = [UInt8].pattern(size, seed: counter)
                    if model[LogKey("k\(key)")] != nil {
                        try await log.annotate(LogKey("k\(key)"), note, durability: .buffered)
                        model[LogKey("k\(key)")]!.annotation = note
                    }
                case .delete(let key):
                    try await ModelWrites.delete(log, &model, key: key, durability: .buffered)
                case .batch(let keys, let size):
                    try await ModelWrites.batch(log, &model, keys: keys, size: size, seed: counter, durability: .buffered)
                case .compact:
                    try await log.compact()
                case .reopen, .kill:
                    if case .kill = operation {
                        try await log.flush()
                        await log.waitForBackgroundCompaction()
                        disk.simulateProcessCrash()
                    } else {
                        try await log.close()
                    }
                    // What a full scan of the same disk finds, for comparison.
                    let reference = try await OutboxLog.open(
                        at: path, configuration: Self.configuration(disk.snapshot(), checkpoints: false, deferred: false))
                    let expected = reference.statistics
                    try await reference.close()
                    log = try await OutboxLog.open(at: path, configuration: configuration)
                    await reopens.count(fromCheckpoint: log.recoveryReport.indexCheckpoint != nil)
                    try await expectLog(log, equals: model, "after \(operation)")
                    let statistics = log.statistics
                    #expect(statistics.liveKeys == expected.liveKeys, "live keys after \(operation)")
                    #expect(statistics.liveBytes == expected.liveBytes, "live bytes after \(operation)")
                    #expect(statistics.segments == expected.segments, "segments after \(operation)")
                }
            }
            try await expectLog(log, equals: model, "at the end")
            #expect(log.statistics.liveKeys == model.count)
            try await log.close()
        }
        let (all, fromCheckpoint) = await reopens.totals
        #expect(fromCheckpoint > all / 2, "only \(fromCheckpoint) of \(all) reopens used a checkpoint")
    }
}

private actor ReopenCounter {
    private var all = 0
    private var fromCheckpoint = 0
    func count(fromCheckpoint used: Bool) {
        all += 1
        if used { fromCheckpoint += 1 }
    }
    var totals: (Int, Int) { (all, fromCheckpoint) }
}
