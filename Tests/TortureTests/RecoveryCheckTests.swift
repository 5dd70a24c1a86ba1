import Foundation
import OutboxLog
import SystemPackage
import Testing

@testable import OutboxTorture

/// The check every crash mode ends with must report only what happened: a
/// crash that left nothing to check is not a violation, and one that lost
/// something still is.
@Suite("Recovery check")
struct RecoveryCheckTests {
    static func value(_ step: Int) -> [UInt8] { TortureValue.make(stream: 2, step: step, element: 0, size: 20) }

    /// A directory that was never created, under a scratch folder of its own.
    static func withMissingLogDirectory(_ body: (FilePath) async throws -> Void) async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-recovery-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        try await body(FilePath(scratch.path).appending("log"))
    }

    /// `outbox torture --mode kill --seed 8658176342631348929 --cycles 1`: the
    /// kill landed before the worker created the log directory, and the
    /// parent's read-only check found none.
    @Test("a kill before the log directory existed, with nothing acknowledged, is an empty log, not a violation")
    func killedBeforeTheDirectoryExisted() async throws {
        try await Self.withMissingLogDirectory { directory in
            let oracle = PrefixOracle(start: StateModel(), operations: [.put("a", Self.value(0), .written), .sync])
            let result = await RecoveryCheck.reopen(
                directory, readOnly: true, oracle: oracle, expecting: .crash(acknowledged: 0, inFlight: 1, keeping: .written))
            let passed = try result.get()
            #expect(passed.prefix == 0)
            #expect(passed.state.entries.isEmpty)
            #expect(!passed.logExisted)
            // Read-only means read-only: the check did not create it.
            #expect(!FileManager.default.fileExists(atPath: directory.string))
        }
    }

    @Test("a missing log directory is still a violation when an acknowledged step should be in it")
    func missingDirectoryAfterAnAcknowledgement() async throws {
        try await Self.withMissingLogDirectory { directory in
            let oracle = PrefixOracle(start: StateModel(), operations: [.put("a", Self.value(0), .written), .sync])
            for readOnly in [true, false] {
                let result = await RecoveryCheck.reopen(
                    directory, readOnly: readOnly, oracle: oracle,
                    expecting: .crash(acknowledged: 1, inFlight: 1, keeping: .written))
                guard case .failure(let failure) = result else {
                    Issue.record("losing an acknowledged write with the whole directory was accepted (read-only: \(readOnly))")
                    continue
                }
                #expect(failure.description.contains("lost acknowledged steps"), "\(failure)")
                if !readOnly { try? FileManager.default.removeItem(atPath: directory.string) }
            }
        }
    }

    @Test("a missing log directory is a violation when an earlier cycle left data in it")
    func missingDirectoryAfterEarlierCycles() async throws {
        try await Self.withMissingLogDirectory { directory in
            var earlier = StateModel()
            earlier.apply(.put("kept", Self.value(7), .durable))
            let oracle = PrefixOracle(start: earlier, operations: [.put("a", Self.value(0), .written)])
            let result = await RecoveryCheck.reopen(
                directory, readOnly: true, oracle: oracle, expecting: .crash(acknowledged: 0, inFlight: 1, keeping: .written))
            guard case .failure(let failure) = result else {
                Issue.record("a log that vanished with an earlier cycle's data was accepted")
                return
            }
            #expect(failure.description.contains("does not exist"), "\(failure)")
        }
    }
}
