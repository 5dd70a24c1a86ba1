/// What the queue mode knows across a run's cycles, and the promises it
/// holds the worker's lines to: every acknowledged element is delivered to
/// every consumer at least once, in order; nothing is invented; commits
/// never go back; a trim never removes what a consumer has not read.
struct QueueOracle {
    /// Acknowledged elements: position → name, and name → position.
    private(set) var acknowledged: [UInt64: String] = [:]
    private var positions: [String: UInt64] = [:]
    /// What each position was seen to hold, acknowledged or not.
    private var seen: [UInt64: String] = [:]
    /// Each consumer's last commit that returned (written or durable: both
    /// survive a kill -9).
    private(set) var committed: [String: UInt64] = [:]
    /// Each consumer's deliveries, over every life.
    private(set) var delivered: [String: Set<UInt64>] = [:]
    /// The highest position delivered to each consumer.
    private var highest: [String: UInt64] = [:]

    /// One worker life: where each consumer's cursor is, its commit in
    /// this life, and each delivery with the cursor before it (checked for
    /// skips at the life's end, when every acknowledgement is known).
    struct Life {
        var cursor: [String: UInt64] = [:]
        var committed: [String: UInt64] = [:]
        var steps: [(consumer: String, after: UInt64, position: UInt64)] = []
        var redeliveries = 0
    }

    mutating func resumed(_ consumer: String, after position: UInt64, in life: inout Life) throws(CycleViolation) {
        if let last = committed[consumer], position < last {
            throw CycleViolation("\(consumer) resumed after \(position), before its commit through \(last) that had returned")
        }
        life.cursor[consumer] = position
        life.committed[consumer] = position
    }

    mutating func appended(_ name: String, at position: UInt64) throws(CycleViolation) {
        if let earlier = positions[name] { throw CycleViolation("\(name) acknowledged at \(position) and at \(earlier)") }
        if let other = acknowledged[position] { throw CycleViolation("\(name) and \(other) both acknowledged at \(position)") }
        try see(name, at: position)
        acknowledged[position] = name
        positions[name] = position
    }

    mutating func delivered(_ name: String, at position: UInt64, to consumer: String, in life: inout Life) throws(CycleViolation) {
        guard name != "garbled" else { throw CycleViolation("\(consumer) read bytes at \(position) that no producer wrote") }
        guard let cursor = life.cursor[consumer] else { throw CycleViolation("\(consumer) read before it resumed") }
        guard position > cursor else {
            throw CycleViolation("\(consumer) read \(position) after \(cursor): out of order, or before its commit")
        }
        try see(name, at: position)
        life.steps.append((consumer, cursor, position))
        life.cursor[consumer] = position
        if !delivered[consumer, default: []].insert(position).inserted { life.redeliveries += 1 }
        highest[consumer] = max(highest[consumer] ?? 0, position)
    }

    mutating func committed(_ consumer: String, through position: UInt64, in life: inout Life) throws(CycleViolation) {
        if let last = committed[consumer], position < last {
            throw CycleViolation("\(consumer) committed \(position) after a commit through \(last)")
        }
        guard position <= (life.cursor[consumer] ?? 0) || position == life.committed[consumer] else {
            throw CycleViolation("\(consumer) committed \(position), past what it read (\(life.cursor[consumer] ?? 0))")
        }
        committed[consumer] = position
        life.committed[consumer] = position
    }

    func trimmed(below: UInt64, consumers: [String]) throws(CycleViolation) {
        guard below > 0 else { return }
        for consumer in consumers where below > (highest[consumer] ?? 0) + 1 {
            throw CycleViolation("a trim removed everything below \(below), past what \(consumer) had read (\(highest[consumer] ?? 0))")
        }
    }

    /// At a life's end: no delivery skipped an acknowledged element.
    func checkSkips(_ life: Life) throws(CycleViolation) {
        let sorted = acknowledged.keys.sorted()
        for step in life.steps {
            // The first acknowledged position after the cursor must not be before the delivery.
            let index = sorted.partitionPoint { $0 <= step.after }
            if index < sorted.count, sorted[index] < step.position {
                throw CycleViolation(
                    "\(step.consumer) read \(step.position) after \(step.after), skipping acknowledged \(sorted[index]) (\(acknowledged[sorted[index]]!))")
            }
        }
    }

    /// At the run's end: every acknowledged element reached every consumer.
    func checkEveryDelivered(_ consumers: [String]) throws(CycleViolation) {
        for consumer in consumers {
            let missing = acknowledged.keys.filter { !(delivered[consumer]?.contains($0) ?? false) }.sorted()
            if let first = missing.first {
                throw CycleViolation("\(consumer) never read \(missing.count) acknowledged element(s), the first \(first) (\(acknowledged[first]!))")
            }
        }
    }

    /// A position holds one element, whoever looks.
    private mutating func see(_ name: String, at position: UInt64) throws(CycleViolation) {
        if let other = seen[position], other != name { throw CycleViolation("position \(position) held \(other), then \(name)") }
        seen[position] = name
    }
}

extension Array where Element == UInt64 {
    /// The index of the first element for which `belongs` is false (the
    /// array is partitioned: true first).
    func partitionPoint(_ belongs: (UInt64) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
