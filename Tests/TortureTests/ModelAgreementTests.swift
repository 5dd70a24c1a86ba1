import OutboxLog
import OutboxLogTesting
import Testing

@testable import OutboxTorture

/// The oracle's model must mean exactly what the engine does: put after
/// annotate (the annotation goes), annotate-or-put on an absent key, delete
/// of an absent key (nothing written), batches that name a key twice or
/// annotate a key set earlier in the same batch. Checked step by step
/// against a real log.
@Suite("State model agrees with the engine")
struct ModelAgreementTests {
    @Test("after every step of an annotation- and batch-heavy workload, the log reads back as the model", arguments: [1 as UInt64, 2, 3])
    func modelMatchesEngine(seed: UInt64) async throws {
        var profile = TortureWorkload.Profile()
        profile.keys = 6  // collisions: batches repeat keys, annotations meet values
        profile.annotatePercent = 30
        profile.batchPercent = 25
        profile.deletePercent = 15
        let operations = TortureWorkload(seed: seed, stream: 7, count: 120, profile: profile).operations()
        #expect(operations.contains { if case .batch(let items, _) = $0 { Set(items.map(\.key)).count < items.count } else { false } })

        let disk = SimulatedFileSystem(directories: ["/model"])
        let log = try await OutboxLog.open(at: "/model/log", configuration: TortureLogConfiguration.make(fileSystem: disk))
        var model = StateModel()
        for (index, operation) in operations.enumerated() {
            let appendedByLog = try await OperationRunner.run(operation, on: log)
            let appendedByModel = model.apply(operation)
            #expect(appendedByLog == appendedByModel, "step \(index): \(operation)")
            let reading = try await LogContents.read(log)
            #expect(reading.problems.isEmpty, "step \(index): \(reading.problems)")
            #expect(reading.state == model, "step \(index) (\(operation)): keys differ: \(reading.state.differences(from: model))")
        }
        try await log.close()
    }
}

extension TortureOperation.BatchItem {
    var key: LogKey {
        switch self {
        case .value(let key, _), .annotateOrValue(let key, _), .tombstone(let key): key
        }
    }
}
