import OutboxLog
import OutboxLogTesting

/// The checks an I/O-fault cycle makes of a log that met a fault.
extension IOFaultTorture {
    static func isPoisoned(_ log: OutboxLog) -> Bool {
        // An annotation of a key with no value: refused as poisoned, or as
        // invalid by a healthy log — never written.
        do {
            _ = try log.submit([.annotation("poison-probe", [1])])
            return false
        } catch {
            return error.code == .poisoned
        }
    }

    /// After a failed append (or sync), every later call must be refused
    /// with `.poisoned`.
    static func poisoningProblem(_ log: OutboxLog, after operation: TortureOperation) async -> String? {
        func expectPoisoned(_ what: String, _ body: () async throws(OutboxLogError) -> Void) async -> String? {
            do {
                try await body()
                return "after \(operation) failed, \(what) succeeded on the poisoned log"
            } catch {
                return error.code == .poisoned ? nil : "after \(operation) failed, \(what) threw \(error.code), not poisoned: \(error)"
            }
        }
        if let problem = await expectPoisoned("an append", { () async throws(OutboxLogError) in
            try await log.annotate("poison-probe", [1], durability: .buffered)
        }) {
            return problem
        }
        if let problem = await expectPoisoned("sync()", { () async throws(OutboxLogError) in try await log.sync() }) { return problem }
        if let key = log.keys.first, let problem = await expectPoisoned("get(\(key))", { () async throws(OutboxLogError) in
            _ = try await log.get(key)
        }) {
            return problem
        }
        return nil
    }

    enum FaultyRecovery {
        case failedAsExpected
        case recovered
        case violation(String)
    }

    /// An open that meets an I/O fault must fail with `.io` — never claim
    /// corruption, never crash — or recover the right state.
    static func faultyRecovery(
        _ disk: SimulatedFileSystem, oracle: PrefixOracle, expecting: RecoveryCheck.Expectation
    ) async -> FaultyRecovery {
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(
                at: directory, configuration: TortureLogConfiguration.make(fileSystem: disk, deterministic: true))
        } catch {
            disk.faults.removeAllRules()
            return error.code == .io ? .failedAsExpected : .violation("the open failed with \(error.code), not .io: \(error)")
        }
        await log.waitForBackgroundCompaction()
        disk.faults.removeAllRules()
        do {
            try await log.close()
        } catch where error.code == .io || error.code == .poisoned {
            // The open's checkpoint marker is written in the background and
            // may have met the fault: the log was poisoned, as it must be.
            return .failedAsExpected
        } catch {
            return .violation("closing a log recovered under faults failed: \(error)")
        }
        switch await RecoveryCheck.reopen(directory, fileSystem: disk, oracle: oracle, expecting: expecting) {
        case .success: return .recovered
        case .failure(let failure): return .violation("recovered under faults, then: \(failure)")
        }
    }
}
