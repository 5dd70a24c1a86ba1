import OutboxLog

/// The crash oracle.
///
/// After a crash, the log must be exactly the state after some prefix of its
/// history — no hole, no reordering, nothing invented — and that prefix must
/// hold every step whose acknowledgement promised to survive this kind of
/// crash: `written` and `durable` ones after `kill -9`, `durable` ones after
/// a power loss. A `written`/`durable` acknowledgement covers every step
/// before it too (the engine writes in sequence order), so the promise is a
/// lower bound on the prefix; the steps that were running when the crash hit
/// give the upper bound.
public struct PrefixOracle: Sendable {
    public let start: StateModel
    public let operations: [TortureOperation]
    /// `states[i]`: the state after the first `i` steps.
    public let states: [StateModel]
    /// What each step's acknowledgement promised (see ``TortureOperation/promise(appended:)``).
    public let promises: [Durability?]

    public init(start: StateModel, operations: [TortureOperation]) {
        self.start = start
        self.operations = operations
        var states = [start]
        var promises: [Durability?] = []
        states.reserveCapacity(operations.count + 1)
        var state = start
        for operation in operations {
            let appended = state.apply(operation)
            promises.append(operation.promise(appended: appended))
            states.append(state)
        }
        self.states = states
        self.promises = promises
    }

    /// The outcome of a check.
    public enum Verdict: Sendable, Equatable {
        /// The recovered state is the state after this many steps.
        case prefix(Int)
        /// No admissible prefix matches; the text says what differs.
        case violation(String)
    }

    /// The shortest prefix the crash may leave when the first `acknowledged`
    /// steps were acknowledged and the crash keeps promises of `level`
    /// (`.written` for a process kill, `.durable` for a power loss).
    public func minimumPrefix(acknowledged: Int, keeping level: Durability) -> Int {
        var minimum = 0
        for index in 0..<min(acknowledged, operations.count) {
            if let promise = promises[index], Self.rank(promise) >= Self.rank(level) { minimum = index + 1 }
        }
        return minimum
    }

    /// Checks `recovered` against every prefix from the minimum the
    /// acknowledgements allow up to `acknowledged + inFlight` steps (the
    /// steps that may have reached the disk without being acknowledged).
    public func check(
        _ recovered: StateModel, acknowledged: Int, inFlight: Int = 1, keeping level: Durability
    ) -> Verdict {
        check(
            recovered, minimum: minimumPrefix(acknowledged: acknowledged, keeping: level),
            maximum: min(operations.count, acknowledged + inFlight), level: level)
    }

    /// Checks that `recovered` is the state after the whole history: for a
    /// log closed cleanly (`close()` syncs everything).
    public func checkComplete(_ recovered: StateModel) -> Verdict {
        check(recovered, minimum: operations.count, maximum: operations.count, level: .buffered)
    }

    private func check(_ recovered: StateModel, minimum: Int, maximum: Int, level: Durability) -> Verdict {
        for length in stride(from: maximum, through: minimum, by: -1) where states[length] == recovered {
            return .prefix(length)
        }
        return .violation(explain(recovered, minimum: minimum, maximum: maximum, level: level))
    }

    /// Says why no prefix matched, as precisely as it can: an acknowledged
    /// step that was lost, or the nearest prefix and the keys that differ.
    private func explain(_ recovered: StateModel, minimum: Int, maximum: Int, level: Durability) -> String {
        if let lost = (0..<minimum).last(where: { states[$0] == recovered }) {
            let promised = (lost..<minimum).last { promises[$0].map { Self.rank($0) >= Self.rank(level) } ?? false }
            let reason = promised.map { "step \($0) (\(operations[$0])) was acknowledged as \(promises[$0]!)" }
                ?? "the log was closed cleanly"
            return "lost acknowledged steps: the log holds the state after \(lost) step(s), "
                + "but \(reason), so steps \(lost)..<\(minimum) must have survived"
        }
        if let beyond = (maximum..<states.count).dropFirst().first(where: { states[$0] == recovered }) {
            return "the log holds \(beyond) step(s), more than the \(maximum) that were issued"
        }
        var closest = minimum
        var closestDifferences = states[minimum].differences(from: recovered)
        for length in minimum...maximum {
            let differences = states[length].differences(from: recovered)
            if differences.count < closestDifferences.count {
                closest = length
                closestDifferences = differences
            }
        }
        let shown = closestDifferences.prefix(4).map { key in
            "\(key): expected \(Self.describe(states[closest].entries[key])), found \(Self.describe(recovered.entries[key]))"
        }
        return "no prefix in \(minimum)...\(maximum) of the history matches (hole, reordering or invented data); "
            + "nearest is \(closest) step(s), differing in \(closestDifferences.count) key(s): "
            + shown.joined(separator: "; ")
    }

    static func rank(_ durability: Durability) -> Int {
        switch durability {
        case .buffered: 0
        case .written: 1
        case .durable: 2
        }
    }

    static func describe(_ entry: StateModel.Entry?) -> String {
        guard let entry else { return "no value" }
        return "value \(TortureValue.label(entry.value))" + (entry.annotation.map { " + annotation \(TortureValue.label($0))" } ?? "")
    }
}

extension TortureValue {
    /// "step 12.0 (300 B)" for a torture value, or its size for anything else.
    public static func label(_ bytes: [UInt8]) -> String {
        guard bytes.count >= headerSize, bytes[0] == 0x54, bytes[1] == 0x56 else { return "\(bytes.count) B of foreign bytes" }
        let step = bytes[10..<14].reversed().reduce(0) { $0 << 8 | Int($1) }
        let element = bytes[14..<16].reversed().reduce(0) { $0 << 8 | Int($1) }
        return "step \(step).\(element) (\(bytes.count) B)"
    }
}
