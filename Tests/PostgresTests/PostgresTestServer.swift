import CLITestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the PostgreSQL tests' server comes from: `OUTBOX_POSTGRES_URL` if
/// set (`.ci/run` sets it), else a throwaway server this test process
/// starts once with `Scripts/postgres/start.sh --no-install --for-process
/// PID` — a cluster in a temporary directory that the script's watcher
/// stops and deletes once this process has ended, however it ends.
///
/// Nothing is installed from here: without the server binaries (Debian's
/// `postgresql` package) the suites are skipped with one line saying how
/// to enable them.
enum PostgresTestServer {
    /// What the search for a server found.
    enum Outcome: Sendable {
        /// A server to test against.
        case url(String)
        /// No binaries to start one with: the suites are skipped.
        case notInstalled
        /// The binaries are there but the server did not start: the suites
        /// run and fail with this (start.sh's standard error).
        case failed(String)
    }

    /// The suites' skip line when no server can be had.
    static let skipReason: Comment =
        "no PostgreSQL server: install Debian's postgresql package (sudo apt-get install -y postgresql), or set OUTBOX_POSTGRES_URL"

    static let environmentURL: String? = ProcessInfo.processInfo.environment["OUTBOX_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// Found (or started) once per test process, however many suites ask at once.
    static let outcome = Task<Outcome, Never> {
        if let environmentURL { return .url(environmentURL) }
        return await start()
    }

    /// The package's root, from this file's place in it.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs start.sh without blocking a thread; its output goes to files
    /// (``ChildProcess``), which the server it leaves running does not hold open.
    static func start() async -> Outcome {
        do {
            let ended = try await ChildProcess.run(
                executable: URL(fileURLWithPath: "/bin/bash"),
                arguments: [
                    packageRoot.appendingPathComponent("Scripts/postgres/start.sh").path, "--no-install", "--for-process", String(getpid()),
                ])
            let (status, printed, errors) = (ended.status, ended.stdout, ended.stderr)
            // start.sh's status for "no server binaries" (--no-install).
            if status == 3 { return .notInstalled }
            let url = printed.trimmingCharacters(in: .whitespacesAndNewlines)
            guard status == 0, url.hasPrefix("postgres://") else {
                return .failed("Scripts/postgres/start.sh exited \(status): \(errors)")
            }
            return .url(url)
        } catch {
            return .failed("could not run Scripts/postgres/start.sh: \(error)")
        }
    }
}

extension SuiteTrait where Self == ConditionTrait {
    /// Runs the suite against `OUTBOX_POSTGRES_URL` or a server of the test
    /// process's own; skips it, in one line, when neither can be had — unless
    /// `CI` is set, where it runs and fails: CI cannot pass without having
    /// tested anything.
    static var needsPostgres: Self {
        .enabled(PostgresTestServer.skipReason) {
            if PostgresTestDatabase.isCI { return true }
            if case .notInstalled = await PostgresTestServer.outcome.value { return false }
            return true
        }
    }
}
