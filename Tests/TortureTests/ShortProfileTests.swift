import OutboxTorture
import Testing

/// The short torture profile run by `swift test`: every mode, a few cycles
/// each, with fixed seeds and one random seed (printed). The long profile is
/// `outbox torture --seconds 600 --mode all` (Docs/RELIABILITY.md).
///
/// Three suites, each serialized, that run beside each other: the modes
/// that kill processes (one at a time, so a kill lands while a child works
/// rather than while it waits for a core), the modes on simulated and real
/// disks in this process, and every mode with the random seed. As one
/// serialized suite they were the longest chain of `swift test`: the rest
/// of the suite had ended minutes before them.
@Suite("Torture, short profile: processes killed", .serialized)
struct ShortProfileTests {
    @Test("kill -9 loop: every written/durable acknowledgement survives, the log is a prefix", arguments: [11 as UInt64, 12])
    func kill(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.kill], seed: seed, cycles: 6)
        TortureHarness.expectClean(report, .kill)
    }

    @Test("outbox: the app killed mid-drain, every write applied exactly once under one key", arguments: [51 as UInt64])
    func outbox(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.outbox], seed: seed, cycles: 2)
        TortureHarness.expectClean(report, .outbox)
        #expect((report[.outbox].details["apps killed"] ?? 0) > 0)
    }

    @Test("lock: a held log is refused to every other opener, in this process and another", arguments: [61 as UInt64])
    func lock(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.lock], seed: seed, cycles: 4)
        TortureHarness.expectClean(report, .lock)
        #expect((report[.lock].details.filter { $0.key.hasPrefix("refused in another process") }.values.reduce(0, +)) > 0)
    }
}

@Suite("Torture, short profile: simulated power loss, I/O faults and corruption", .serialized)
struct ShortProfileDiskTests {
    @Test("simulated power loss in every mode: every durable acknowledgement survives", arguments: [21 as UInt64, 22])
    func powerLoss(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.powerloss], seed: seed, cycles: 5)
        TortureHarness.expectClean(report, .powerloss)
    }

    @Test("I/O faults: poisoning, nothing acknowledged unsynced, recovery under faults", arguments: [31 as UInt64, 32])
    func ioFaults(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.iofault], seed: seed, cycles: 7)
        TortureHarness.expectClean(report, .iofault)
    }

    @Test("corruption: never a crash, a hang or a byte that was not written", arguments: [41 as UInt64])
    func corruption(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.corrupt], seed: seed, cycles: 12)
        TortureHarness.expectClean(report, .corrupt)
        // The first case of a base log is an undamaged control.
        #expect(report[.corrupt].details["undamaged controls"] == 1)
    }

    @Test("outboxfault: failed syncs and power loss mid-drain; nothing refused is sent, nothing acknowledged lost", arguments: [61 as UInt64])
    func outboxFaults(seed: UInt64) async throws {
        let report = try await TortureHarness.run([.outboxfault], seed: seed, cycles: 4)
        TortureHarness.expectClean(report, .outboxfault)
        #expect((report[.outboxfault].details["enqueues refused, the machine running"] ?? 0) > 0, "\(report.text)")
    }
}

@Suite("Torture, short profile: every mode with a random seed")
struct ShortProfileRandomSeedTests {
    @Test("every mode with a random seed (printed above)")
    func randomSeed() async throws {
        let seed = TortureHarness.randomSeed
        // A kill cycle can end before its worker acknowledges anything: its
        // kill moment is real time after the start, and a loaded machine
        // starts the worker late. Three cycles could all end so (recovering
        // nothing to check); a kill cycle costs a fraction of a second, so
        // that mode gets more of them.
        let others = TortureMode.allCases.filter { $0 != .kill }
        let report = try await TortureHarness.run(others, seed: seed, cycles: 3)
        for mode in others { TortureHarness.expectClean(report, mode) }
        let kills = try await TortureHarness.run([.kill], seed: seed, cycles: 12)
        TortureHarness.expectClean(kills, .kill)
    }
}
