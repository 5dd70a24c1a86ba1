import SystemPackage

/// What a torture run does.
public struct TortureOptions: Sendable {
    /// Seeds every workload, kill plan, fault and corruption. The same seed
    /// replays the same inputs (kill moments also depend on real timing).
    public var seed: UInt64
    /// The modes to run, in this order.
    public var modes: [TortureMode]
    /// Stop starting new cycles after this many seconds in total, shared
    /// among the modes (``TortureMode/shareOfAll``). `nil`: no time limit.
    public var seconds: Double?
    /// Run at most this many cycles per mode. `nil`: no limit. At least one
    /// of ``seconds`` and ``cycles`` must be set.
    public var cycles: Int?
    /// The first cycle number (for modes whose cycles are independent, to
    /// replay one cycle of a violation report).
    public var firstCycle = 0
    /// A scratch directory the run may fill (and empties when done).
    public var directory: FilePath
    /// The `outbox` executable, for the modes that run a child process
    /// (kill, outbox, and libfiu in iofault).
    public var workerExecutable: String?
    /// Whether the iofault mode also runs the worker under `fiu-run`
    /// (libfiu) when it is installed.
    public var libfiu = true
    /// Whether the outbox and outboxfault modes run on encrypted stores
    /// (a key derived from the seed), and the outbox mode checks that no
    /// app text reaches the files.
    public var encrypted = false
    /// Called with one line of progress now and then.
    public var progress: @Sendable (String) -> Void

    public init(
        seed: UInt64, modes: [TortureMode] = TortureMode.allCases, seconds: Double? = nil, cycles: Int? = nil,
        directory: FilePath, workerExecutable: String? = nil, progress: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.seed = seed
        self.modes = modes
        self.seconds = seconds
        self.cycles = cycles
        self.directory = directory
        self.workerExecutable = workerExecutable
        self.progress = progress
    }
}
