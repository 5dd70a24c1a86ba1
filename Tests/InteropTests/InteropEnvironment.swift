import CLITestSupport
import Foundation
import Testing

/// The Python virtual environment the interop tests run their servers in,
/// made on first use: when `.build/pyenv` is missing, the test process runs
/// `Scripts/interop/setup-venv.sh` once (pinned packages from PyPI), its
/// output in `.build/interop-setup.log`. Without python3-venv, or when the
/// setup fails (no network, say), the suite is skipped in one line saying
/// which — unless `CI` is set, where it runs and fails.
enum InteropEnvironment {
    /// What the search for an environment found.
    enum Outcome: Sendable, Equatable {
        case ready
        /// python3 cannot make a virtual environment (python3-venv missing).
        case noVenvModule
        /// setup-venv.sh failed: its last line.
        case setupFailed(String)
    }

    static let setupLog = InteropServer.packageRoot.appendingPathComponent(".build/interop-setup.log")

    /// Found (or made) once per test process.
    static let outcome = Task<Outcome, Never> {
        // A Python named by OUTBOX_INTEROP_PYTHON is the caller's to make.
        if ProcessInfo.processInfo.environment["OUTBOX_INTEROP_PYTHON"] != nil {
            if InteropServer.venvExists { return .ready }
            return .setupFailed("OUTBOX_INTEROP_PYTHON names no executable: \(InteropServer.python)")
        }
        if isComplete { return .ready }
        return await setUp()
    }

    /// setup-venv.sh finished: it copies the requirements it installed
    /// beside the venv last, and they are today's (a venv left by a failed
    /// or older install is set up again; pip adds only what is missing).
    static var isComplete: Bool {
        let installed = InteropServer.packageRoot.appendingPathComponent(".build/pyenv/outbox-requirements.txt")
        let wanted = InteropServer.packageRoot.appendingPathComponent("Scripts/interop/requirements.txt")
        guard InteropServer.venvExists, let done = FileManager.default.contents(atPath: installed.path) else { return false }
        return done == FileManager.default.contents(atPath: wanted.path)
    }

    /// Runs setup-venv.sh without blocking a thread.
    static func setUp() async -> Outcome {
        do {
            try FileManager.default.createDirectory(at: setupLog.deletingLastPathComponent(), withIntermediateDirectories: true)
            var environment = ProcessInfo.processInfo.environment
            // Offline, fail within a minute rather than pip's default retries.
            environment["PIP_DEFAULT_TIMEOUT"] = environment["PIP_DEFAULT_TIMEOUT"] ?? "20"
            environment["PIP_RETRIES"] = environment["PIP_RETRIES"] ?? "1"
            let ended = try await ChildProcess.run(
                executable: URL(fileURLWithPath: "/bin/bash"),
                arguments: [InteropServer.packageRoot.appendingPathComponent("Scripts/interop/setup-venv.sh").path],
                environment: environment, combinedOutput: setupLog)
            let status = ended.status
            // setup-venv.sh's status for "python3 cannot make a virtual environment".
            if status == 3 { return .noVenvModule }
            if status == 0 && isComplete { return .ready }
            let lines = ended.stdout.split(separator: "\n").map(String.init)
            return .setupFailed(lines.last ?? "exit status \(status)")
        } catch {
            return .setupFailed("could not run Scripts/interop/setup-venv.sh: \(error)")
        }
    }

    /// Why a suite without an environment fails under CI.
    static func failure(_ outcome: Outcome) -> String? {
        switch outcome {
        case .ready: nil
        case .noVenvModule: "python3 cannot make a virtual environment: install python3-venv"
        case .setupFailed(let line): "Scripts/interop/setup-venv.sh failed: \(line) (all of it: \(setupLog.path))"
        }
    }
}

extension SuiteTrait where Self == ConditionTrait {
    /// Runs the suite with the interop environment, made here if missing;
    /// skips it in one line when it cannot be had (outside CI).
    static var needsInteropEnvironment: Self {
        .enabled("interop tests need python3-venv: sudo apt-get install -y python3-venv") {
            if InteropServer.inCI { return true }
            return await InteropEnvironment.outcome.value != .noVenvModule
        }
    }

    /// The second half of ``needsInteropEnvironment``, for its own skip line.
    static var needsInteropSetup: Self {
        .enabled("interop tests skipped: Scripts/interop/setup-venv.sh failed (PyPI unreachable?); its output: .build/interop-setup.log") {
            if InteropServer.inCI { return true }
            if case .setupFailed = await InteropEnvironment.outcome.value { return false }
            return true
        }
    }
}
