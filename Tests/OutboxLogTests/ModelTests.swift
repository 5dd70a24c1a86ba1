import CLITestSupport
import OutboxLog
import PropertyBased
import SystemPackage
import Testing

/// Random sequences of operations against a dictionary: after every reopen
/// and at the end, the log must hold exactly what the model holds.
@Suite("Model-based", .propertySeedFromEnvironment)
struct ModelTests {
    enum Operation: Sendable, CustomStringConvertible {
        case put(key: Int, size: Int, durability: Durability)
        case annotate(key: Int, size: Int)
        case delete(key: Int)
        case batch(keys: [Int], size: Int)
        case compact
        case reopen

        var description: String {
            switch self {
            case .put(let key, let size, let durability): "put(k\(key), \(size)B, \(durability))"
            case .annotate(let key, let size): "annotate(k\(key), \(size)B)"
            case .delete(let key): "delete(k\(key))"
            case .batch(let keys, let size): "batch(\(keys.map { "k\($0)" }), \(size)B)"
            case .compact: "compact"
            case .reopen: "reopen"
            }
        }
    }

    static let operation = Gen<Operation>.frequency(
        (6, zip(Gen.int(in: 0...11), Gen.int(in: 0...600), Gen<Durability>.case).map { Operation.put(key: $0, size: $1, durability: $2) }),
        (2, zip(Gen.int(in: 0...11), Gen.int(in: 0...40)).map { Operation.annotate(key: $0, size: $1) }),
        (2, Gen.int(in: 0...11).map { Operation.delete(key: $0) }),
        (1, zip(Gen.int(in: 0...11).array(of: 1...4), Gen.int(in: 0...200)).map { Operation.batch(keys: $0, size: $1) }),
        (1, Gen.always(Operation.compact)),
        (1, Gen.always(Operation.reopen))
    )

    @Test("random puts, annotations, deletes, batches, compactions and reopens agree with a dictionary")
    func agreesWithModel() async throws {
        await propertyCheck(count: modelCases(40), input: Self.operation.array(of: 1...80)) { operations in
            let directory = TemporaryDirectory()
            var log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
            var model: LogModel = [:]
            var counter = 0
            for operation in operations {
                counter += 1
                switch operation {
                case .put(let key, let size, let durability):
                    try await ModelWrites.put(log, &model, key: key, size: size, seed: counter, durability: durability)
                case .annotate(let key, let size):
                    let note = [UInt8].pattern(size, seed: counter)
                    if model[LogKey("k\(key)")] != nil {
                        try await log.annotate(LogKey("k\(key)"), note, durability: .buffered)
                        model[LogKey("k\(key)")]!.annotation = note
                    } else {
                        await #expect(throws: OutboxLogError.self) {
                            try await log.annotate(LogKey("k\(key)"), note, durability: .buffered)
                        }
                    }
                case .delete(let key):
                    try await ModelWrites.delete(log, &model, key: key, durability: .written)
                case .batch(let keys, let size):
                    try await ModelWrites.batch(log, &model, keys: keys, size: size, seed: counter, durability: .durable)
                case .compact:
                    try await log.compact()
                case .reopen:
                    try await log.close()
                    log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
                    #expect(log.recoveryReport.isClean)
                    try await expectLog(log, equals: model, "after reopen")
                }
            }
            try await expectLog(log, equals: model, "at the end")
            let statistics = log.statistics
            #expect(statistics.liveKeys == model.count)
            try await log.close()
        }
    }
}
