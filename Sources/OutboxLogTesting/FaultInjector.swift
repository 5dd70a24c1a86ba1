import OutboxLocking
import SystemPackage

/// Identifies a rule installed in a ``FaultInjector``.
public struct FaultRuleID: Sendable, Hashable {
    let rawValue: Int
}

/// A fault the injector decided to inject, as recorded in
/// ``FaultInjector/injectedFaults``.
public struct InjectedFault: Sendable, Hashable, CustomStringConvertible {
    /// The failed operation.
    public let operation: FileSystemOperation
    /// The paths the call involved (empty for an unknown descriptor).
    public let paths: [FilePath]
    /// What the rule made the call do.
    public let effect: FaultRule.Effect
    /// For a `write` with ``FaultRule/Effect/failAfterPartialWrite(_:)`` or
    /// ``FaultRule/Effect/shortWrite``: how many leading bytes to write.
    /// `nil` for every other fault.
    public let bytesToWrite: Int?
    /// The rule that fired.
    public let rule: FaultRuleID
    /// The operation's call number (1-based, counting every call of that
    /// operation on this injector, like ``FaultInjector/callCount(of:paths:)``).
    public let callNumber: Int

    /// The errno the call throws, or `nil` for a short write.
    public var error: Errno? { effect.error }

    public var description: String {
        let target = paths.isEmpty ? "unknown path" : paths.map(\.string).joined(separator: " -> ")
        guard let error else {
            return "\(operation) #\(callNumber) on \(target) was shortened to \(bytesToWrite ?? 0) bytes"
        }
        let written = bytesToWrite.map { " after writing \($0) bytes" } ?? ""
        return "\(operation) #\(callNumber) on \(target) failed with \(error)\(written)"
    }
}

/// Holds fault rules and per-operation call counters; shared by
/// ``SimulatedFileSystem`` and ``FaultInjectingFileSystem``.
///
/// Every call a file system receives is first passed to ``intercept(_:paths:byteCount:)``,
/// which counts it and decides whether it fails. Rules can be installed and
/// removed at any time, from any thread; a change applies to the next call.
/// All randomness (random triggers, partial-write lengths) comes from a
/// generator seeded at creation, so a single-threaded workload sees the
/// same faults on every run.
public final class FaultInjector: Sendable {
    fileprivate struct InstalledRule {
        let id: FaultRuleID
        let rule: FaultRule
        var matchingCalls = 0
        var failures = 0

        var isExhausted: Bool {
            switch rule.repetition {
            case .once: failures >= 1
            case .times(let n): failures >= n
            case .always: false
            }
        }
    }

    /// Counting key: an operation and the exact paths it involved.
    fileprivate struct CallKey: Hashable {
        let operation: FileSystemOperation
        let paths: [FilePath]
    }

    fileprivate struct State {
        var rules: [InstalledRule] = []
        var nextRuleID = 0
        var totals: [FileSystemOperation: Int] = [:]
        var callsByPath: [CallKey: Int] = [:]
        var injected: [InjectedFault] = []
        var random: SplitMix64
        /// FNV-1a over every call in order: see ``scheduleFingerprint``.
        var fingerprint: UInt64 = 0xcbf2_9ce4_8422_2325
    }

    private let state: Locked<State>

    /// Creates an injector with no rules and zeroed counters. `seed` drives
    /// random triggers and partial-write lengths.
    public init(seed: UInt64 = 0) {
        state = Locked(State(random: SplitMix64(seed: seed)))
    }

    /// Installs `rule`; it starts counting matching calls now.
    @discardableResult
    public func install(_ rule: FaultRule) -> FaultRuleID {
        state.withLock { state in
            let id = FaultRuleID(rawValue: state.nextRuleID)
            state.nextRuleID += 1
            state.rules.append(InstalledRule(id: id, rule: rule))
            return id
        }
    }

    /// Removes one rule; later calls are no longer affected by it.
    public func remove(_ id: FaultRuleID) {
        state.withLock { $0.rules.removeAll { $0.id == id } }
    }

    /// Removes every rule ("the disk is healthy again"). Counters and the
    /// log of injected faults are kept.
    public func removeAllRules() {
        state.withLock { $0.rules.removeAll() }
    }

    /// How many times rule `id` has fired so far (0 for an unknown or
    /// removed rule).
    public func failureCount(of id: FaultRuleID) -> Int {
        state.withLock { state in state.rules.first { $0.id == id }?.failures ?? 0 }
    }

    /// How many calls of `operation` the file system has received (failed
    /// ones included) since creation or ``resetCallCounts()``, counting only
    /// calls whose paths match `paths`.
    public func callCount(of operation: FileSystemOperation, paths: PathFilter = .any) -> Int {
        state.withLock { state in
            if paths.matchesEverything { return state.totals[operation, default: 0] }
            var count = 0
            for (key, calls) in state.callsByPath where key.operation == operation {
                if paths.matches(anyOf: key.paths) { count += calls }
            }
            return count
        }
    }

    /// Call counts of every operation (failed calls included).
    public var callCounts: [FileSystemOperation: Int] {
        state.withLock { $0.totals }
    }

    /// Zeroes the call counters (rules keep their own counts).
    public func resetCallCounts() {
        state.withLock { state in
            state.totals.removeAll()
            state.callsByPath.removeAll()
        }
    }

    /// Every fault injected so far, in order.
    public var injectedFaults: [InjectedFault] {
        state.withLock { $0.injected }
    }

    /// A hash of every call received so far, in order: the operation, the
    /// paths, and a write's byte count. Two runs that made the same calls in
    /// the same order have the same fingerprint, so a replay can check it
    /// followed the schedule of the run it replays (the torture suite
    /// prints it with every violation). `close` calls are left out: they
    /// change nothing on disk, and the order in which a closing log lets
    /// go of its files is not specified.
    public var scheduleFingerprint: UInt64 {
        state.withLock { $0.fingerprint }
    }

    /// ``intercept(_:paths:byteCount:)`` for operations whose injected
    /// failure has no side effect: counts the call and throws the injected
    /// errno, if any.
    public func check(_ operation: FileSystemOperation, paths: [FilePath]) throws(Errno) {
        if let error = intercept(operation, paths: paths)?.error { throw error }
    }

    /// Counts a call and decides whether it fails.
    ///
    /// File systems call this first thing in every operation, with the paths
    /// the call involves (the descriptor's path for descriptor operations,
    /// source then destination for `rename`, empty if unknown) and, for
    /// writes, the number of bytes to write. Returns the fault to inject, or
    /// `nil` to proceed normally. Custom `FileSystem` wrappers may call it
    /// too.
    public func intercept(_ operation: FileSystemOperation, paths: [FilePath], byteCount: Int = 0) -> InjectedFault? {
        state.withLock { state in
            state.mixIntoFingerprint(operation, paths: paths, byteCount: byteCount)
            state.totals[operation, default: 0] += 1
            state.callsByPath[CallKey(operation: operation, paths: paths), default: 0] += 1
            let callNumber = state.totals[operation, default: 0]

            var fault: InjectedFault?
            for index in state.rules.indices {
                let rule = state.rules[index].rule
                guard rule.operation == operation, rule.paths.matches(anyOf: paths) else { continue }
                // Every matching rule counts the call, even when an earlier
                // rule already decided to fail it: a rule's call numbers
                // must not depend on which other rules are installed.
                state.rules[index].matchingCalls += 1
                guard fault == nil, !state.rules[index].isExhausted else { continue }
                let fires: Bool
                switch rule.trigger {
                case .call(let n): fires = state.rules[index].matchingCalls >= n
                case .randomly(let probability): fires = state.random.nextBool(probability: probability)
                }
                guard fires else { continue }
                var prefix: Int?
                if operation == .write {
                    switch rule.effect {
                    case .fail: break
                    case .failAfterPartialWrite:
                        prefix = byteCount > 0 ? state.random.next(below: byteCount) : 0
                    case .shortWrite:
                        // A write of 0 or 1 byte cannot be shortened: let it through.
                        guard byteCount > 1 else { continue }
                        prefix = state.random.next(in: 1...(byteCount - 1))
                    }
                } else if rule.effect == .shortWrite {
                    continue  // meaningless outside writes
                }
                state.rules[index].failures += 1
                fault = InjectedFault(
                    operation: operation, paths: paths, effect: rule.effect, bytesToWrite: prefix,
                    rule: state.rules[index].id, callNumber: callNumber)
            }
            if let fault { state.injected.append(fault) }
            return fault
        }
    }
}

extension FaultInjector.State {
    mutating func mixIntoFingerprint(_ operation: FileSystemOperation, paths: [FilePath], byteCount: Int) {
        guard operation != .close else { return }
        func mix(_ byte: UInt8) { fingerprint = (fingerprint ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        for byte in operation.rawValue.utf8 { mix(byte) }
        for path in paths {
            mix(0)
            for byte in path.string.utf8 { mix(byte) }
        }
        withUnsafeBytes(of: UInt64(byteCount).littleEndian) { for byte in $0 { mix(byte) } }
    }
}
