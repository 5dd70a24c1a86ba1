import OutboxLog
import SystemPackage

/// Reopens a crashed log and holds it to the oracle: the step every crash
/// mode ends with.
enum RecoveryCheck {
    /// A recovery that kept the promise.
    struct Passed: Sendable {
        var state: StateModel
        var recovery: RecoveryReport
        /// How many steps of the history the log holds.
        var prefix: Int
        /// `false` when a read-only check found no log directory at all (a
        /// worker killed before it created it): the log was held to the
        /// oracle as empty.
        var logExisted = true
    }

    /// What the acknowledgements promised.
    enum Expectation: Sendable {
        /// `acknowledged` steps returned, `inFlight` more may have landed,
        /// and every promise of at least `keeping` must have survived.
        case crash(acknowledged: Int, inFlight: Int, keeping: Durability)
        /// The log was closed cleanly: exactly the whole history.
        case complete
    }

    /// Opens the log in `directory` (strict, and read-only if asked), reads
    /// everything back through both read paths, checks it against `oracle`,
    /// and closes it. Returns the violation as text if anything is wrong.
    static func reopen(
        _ directory: FilePath, fileSystem: any FileSystem = PosixFileSystem(), readOnly: Bool = false,
        oracle: PrefixOracle, expecting expectation: Expectation
    ) async -> Result<Passed, Failure> {
        if readOnly, isMissing(directory, on: fileSystem) {
            // A read-only open refuses a missing directory that a strict open
            // would create empty. A worker killed before it created the
            // directory left just that: an empty log, held to the oracle like
            // any other — it passes only if nothing acknowledged is missing.
            switch judge(StateModel(), recovery: RecoveryReport(directory: directory.string), oracle, expectation) {
            case .success(var passed):
                passed.logExisted = false
                return .success(passed)
            case .failure(let failure):
                return .failure(Failure("the log directory does not exist: \(failure)"))
            }
        }
        var configuration = TortureLogConfiguration.make(fileSystem: fileSystem, deterministic: true)
        configuration.readOnly = readOnly
        let log: OutboxLog
        do {
            log = try await OutboxLog.open(at: directory, configuration: configuration)
        } catch {
            return .failure(Failure("the strict\(readOnly ? ", read-only" : "") open failed: \(error)"))
        }
        // The open's checkpoint may roll a segment and start a compaction:
        // let it finish before reading, so every run reads in one order.
        await log.waitForBackgroundCompaction()
        defer { withExtendedLifetime(log) {} }
        let reading: LogContents.Reading
        do {
            reading = try await LogContents.read(log)
        } catch {
            try? await log.close()
            return .failure(Failure("reading the recovered log failed: \(error)"))
        }
        do {
            try await log.close()
        } catch {
            return .failure(Failure("closing the recovered log failed: \(error)"))
        }
        if !reading.problems.isEmpty {
            return .failure(Failure(reading.problems.prefix(3).joined(separator: "; ")))
        }
        return judge(reading.state, recovery: log.recoveryReport, oracle, expectation)
    }

    /// Holds what a recovery left to what the acknowledgements promised.
    private static func judge(
        _ state: StateModel, recovery: RecoveryReport, _ oracle: PrefixOracle, _ expectation: Expectation
    ) -> Result<Passed, Failure> {
        let verdict: PrefixOracle.Verdict
        switch expectation {
        case .crash(let acknowledged, let inFlight, let keeping):
            verdict = oracle.check(state, acknowledged: acknowledged, inFlight: inFlight, keeping: keeping)
        case .complete:
            verdict = oracle.checkComplete(state)
        }
        switch verdict {
        case .prefix(let length):
            return .success(Passed(state: state, recovery: recovery, prefix: length))
        case .violation(let detail):
            return .failure(Failure(detail + " [recovery: \(oneLine(recovery.description))]"))
        }
    }

    private static func isMissing(_ directory: FilePath, on fileSystem: any FileSystem) -> Bool {
        do { return try fileSystem.itemKind(at: directory) == nil } catch { return false }  // let the open report it
    }

    struct Failure: Error, Sendable, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func oneLine(_ text: String) -> String { text.split(whereSeparator: \.isNewline).joined(separator: "; ") }
}
