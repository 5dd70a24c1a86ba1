/// The order in which spooled entries move into the queue: each spool in
/// its own order; across spools, the entry enqueued first (`createdAt`,
/// then the spool's name) — except that an entry whose dependency is still
/// waiting in another spool waits behind it, so a dependency spooled by
/// another process is in the queue before its dependent.
struct SpoolOrder {
    private var spools: [[SpooledRecord]]
    private var heads: [Int]
    private var stopped: Set<Int> = []
    /// How many entries with each id are still waiting, in any spool.
    private var waiting: [OutboxEntryID: Int] = [:]

    init(_ spools: [[SpooledRecord]]) {
        self.spools = spools
        heads = Array(repeating: 0, count: spools.count)
        for record in spools.joined() { if let id = record.id { waiting[id, default: 0] += 1 } }
    }

    /// The next record to move in and its spool's index; `nil` when done.
    func next() -> (Int, SpooledRecord)? {
        let candidates = spools.indices.filter { !stopped.contains($0) && heads[$0] < spools[$0].count }
            .map { ($0, spools[$0][heads[$0]]) }
            .sorted { a, b in
                a.1.createdAt != b.1.createdAt ? a.1.createdAt < b.1.createdAt : a.1.spool.hex < b.1.spool.hex
            }
        // Were every candidate waiting (only a cycle, which ids drawn before
        // their dependents cannot make), the first goes anyway.
        return candidates.first { _, record in
            !record.dependencies.contains { (waiting[$0] ?? 0) > 0 && $0 != record.id }
        } ?? candidates.first
    }

    /// The head of spool `index` was moved in.
    mutating func consume(_ index: Int) {
        if let id = spools[index][heads[index]].id { waiting[id, default: 1] -= 1 }
        heads[index] += 1
    }

    /// Spool `index` takes no more entries this time; returns how many it keeps.
    mutating func stop(_ index: Int) -> Int {
        stopped.insert(index)
        for record in spools[index][heads[index]...] { if let id = record.id { waiting[id, default: 1] -= 1 } }
        return spools[index].count - heads[index]
    }
}
