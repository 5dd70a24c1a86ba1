import SystemPackage

extension SimulatedFileSystem {
    /// Simulates `kill -9` of the process using the file system.
    ///
    /// Every descriptor is closed (later use fails with `EBADF`) and every
    /// lock released. Nothing else changes: file contents and directory
    /// entries stay exactly as reads saw them, and what was unsynced stays
    /// unsynced (the kernel still holds the page cache and will write it
    /// back, or not, before a later power loss).
    ///
    /// Threads of the "dead" process that are still running keep calling
    /// the file system; their descriptors are gone, so they fail with `EBADF`
    /// instead of touching the new process's files.
    public func simulateProcessCrash() {
        state.withLock { $0.closeEverything() }
    }

    /// Simulates a power loss (or kernel panic) of the whole machine.
    ///
    /// Every descriptor is closed and every lock released; then every
    /// directory and file is rebuilt from its durable image plus the
    /// unsynced operations that `mode` lets through (see ``PowerLossMode``),
    /// with all random choices drawn from `seed`. Afterwards the visible and
    /// durable images are equal and nothing is unsynced. Files and
    /// directories that no surviving name reaches are gone.
    ///
    /// Deterministic: the same sequence of operations followed by the same
    /// mode and seed gives the same result. Fault rules and call counters
    /// are not affected.
    ///
    /// - Returns: what landed and what was lost, to print when a test fails.
    @discardableResult
    public func simulatePowerLoss(_ mode: PowerLossMode, seed: UInt64 = 0) -> PowerLossReport {
        state.withLock { $0.losePower(mode: mode, seed: seed) }
    }

    /// An independent deep copy of the whole file system: names, visible and
    /// durable images, unsynced operations and the effects of failed syncs.
    ///
    /// The copy has no open descriptors and no locks — as if the process
    /// that held them had crashed at this instant — and its own
    /// ``FaultInjector`` (by default a fresh one with no rules and zeroed
    /// counters). Use it to fork
    /// one state and crash it several ways:
    ///
    /// ```swift
    /// for mode in PowerLossMode.allCases {
    ///     let fork = fileSystem.snapshot()
    ///     fork.simulatePowerLoss(mode, seed: 7)
    ///     try reopenAndVerify(fork)
    /// }
    /// ```
    public func snapshot(faults: FaultInjector = FaultInjector()) -> SimulatedFileSystem {
        var copy = state.withLock { $0 }
        copy.closeEverything()
        return SimulatedFileSystem(state: copy, faults: faults)
    }
}
