import OutboxLogTesting

/// What one life of the app meets in the `outboxfault` mode, drawn from the
/// seed, the cycle and the life: a sync that fails (once, or from then on),
/// a power loss at a random change to the disk, or both; every life but the
/// last ends in a power loss, whatever its unsynced writes then become.
struct OutboxFaultPlan: Sendable, CustomStringConvertible {
    /// The Nth sync of a file (after the store is open) fails with EIO; with
    /// `syncFailsFromThenOn`, every later one too.
    var failingSync: Int?
    var syncFailsFromThenOn: Bool
    /// The machine dies at its Nth change to the disk (counted from the
    /// start of the life, the open included), or, if `nil`, once the life
    /// has enqueued its writes and drained a while.
    var powerLossAtCall: Int?
    /// What the unsynced writes become.
    var powerLoss: PowerLossMode
    var powerLossSeed: UInt64
    /// The last life: no fault, drains everything.
    var isLast: Bool

    static func draw(life: Int, lives: Int, _ random: inout SplitMix64) -> OutboxFaultPlan {
        let isLast = life == lives - 1
        let kind = random.next(below: 3)  // 0: a failed sync, 1: a power loss mid-life, 2: both
        return OutboxFaultPlan(
            failingSync: isLast || kind == 1 ? nil : 1 + random.next(below: 12),
            syncFailsFromThenOn: random.nextBool(),
            powerLossAtCall: isLast || kind == 0 ? nil : 10 + random.next(below: 250),
            powerLoss: PowerLossMode.allCases[random.next(below: PowerLossMode.allCases.count)],
            powerLossSeed: random.next(),
            isLast: isLast)
    }

    var description: String {
        if isLast { return "no faults, drained to the end" }
        var parts: [String] = []
        if let failingSync { parts.append("sync #\(failingSync) fails\(syncFailsFromThenOn ? " from then on" : " once")") }
        parts.append("power loss (\(powerLoss)) " + (powerLossAtCall.map { "at disk call \($0)" } ?? "at the end of the life"))
        return parts.joined(separator: ", ")
    }
}

/// Where the app stands with one write, across lives.
enum OutboxFaultWrite: Sendable, Equatable {
    /// Not enqueued yet (or to be enqueued again).
    case owed
    /// An enqueue returned: enqueued, coalesced or duplicate. It must be
    /// applied exactly once.
    case acknowledged
    /// Every enqueue of it so far failed while the machine was running,
    /// and the app gave up on it: it must never reach the server.
    case abandoned
}
