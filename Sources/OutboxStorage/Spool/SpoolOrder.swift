import HeapModule
import OutboxModel

/// What the order of spooled entries looks at in a record.
package protocol SpoolOrdered {
    /// The entry's id; `nil` for a record that does not read as an entry.
    var id: OutboxEntryID? { get }
    /// When the app created it (ms since 1970).
    var createdAt: Int64 { get }
    var dependencies: [OutboxEntryID] { get }
}

extension SpooledRecord: SpoolOrdered {}

/// The order in which spooled entries move into the queue: each spool in
/// its own order; across spools, the entry enqueued first (`createdAt`,
/// then the spool's name) — except that an entry whose dependency is still
/// waiting in another spool waits behind it, so a dependency spooled by
/// another process is in the queue before its dependent.
///
/// Each spool's next record (its head) is in a heap, so the order costs
/// O(log s) per record for s spools where ranking every head each time
/// cost O(s log s): a queue held while a writer spooled a million entries
/// a batch at a time has thousands of spools.
///
/// - Complexity: building it, O(n + s log s) for n records in s spools;
///   ``next()`` and ``consume(_:)``, O(log s) amortized, plus O(k log s)
///   while k heads wait for a dependency.
package struct SpoolOrder<Record: SpoolOrdered> {
    /// A spool's head as the heap ranks it. A head the spool has moved past
    /// (or a stopped spool's) stays in the heap until it reaches the top,
    /// and is dropped there.
    private struct Head: Comparable {
        var createdAt: Int64
        /// The rank of the spool's name among the spools' names.
        var name: Int
        var spool: Int
        var position: Int

        static func < (a: Self, b: Self) -> Bool {
            (a.createdAt, a.name, a.position) < (b.createdAt, b.name, b.position)
        }
    }

    private let spools: [[Record]]
    private let names: [Int]
    private var heads: [Int]
    private var stopped: [Bool]
    private var queue = Heap<Head>()
    /// How many entries with each id are still waiting, in any spool.
    private var waiting: [OutboxEntryID: Int] = [:]

    /// The order of `spools`' records; `names[i]` ranks spool i's name
    /// among theirs (ties of `createdAt` go to the lower).
    package init(_ spools: [[Record]], names: [Int]) {
        precondition(names.count == spools.count, "one name per spool")
        self.spools = spools
        self.names = names
        heads = Array(repeating: 0, count: spools.count)
        stopped = Array(repeating: false, count: spools.count)
        for spool in spools {
            for record in spool { if let id = record.id { waiting[id, default: 0] += 1 } }
        }
        for index in spools.indices { pushHead(of: index) }
    }

    /// The next record to move in and its spool's index; `nil` when done.
    /// The caller then consumes it or stops its spool.
    package mutating func next() -> (Int, Record)? {
        var held: [Head] = []
        defer { for head in held { queue.insert(head) } }
        while let top = queue.min {
            guard isCurrent(top) else {
                _ = queue.removeMin()
                continue
            }
            let record = spools[top.spool][top.position]
            guard waitsForAnother(record) else { return (top.spool, record) }
            held.append(queue.removeMin())
        }
        // Were every head waiting (only a cycle, which ids drawn before
        // their dependents cannot make), the first goes anyway.
        return held.first.map { ($0.spool, spools[$0.spool][$0.position]) }
    }

    /// The head of spool `index` was moved in.
    package mutating func consume(_ index: Int) {
        if let id = spools[index][heads[index]].id { waiting[id, default: 1] -= 1 }
        heads[index] += 1
        pushHead(of: index)
    }

    /// Spool `index` takes no more entries this time; returns how many it keeps.
    package mutating func stop(_ index: Int) -> Int {
        stopped[index] = true
        for record in spools[index][heads[index]...] { if let id = record.id { waiting[id, default: 1] -= 1 } }
        return spools[index].count - heads[index]
    }

    private mutating func pushHead(of index: Int) {
        let position = heads[index]
        guard !stopped[index], position < spools[index].count else { return }
        queue.insert(
            Head(createdAt: spools[index][position].createdAt, name: names[index], spool: index, position: position))
    }

    private func isCurrent(_ head: Head) -> Bool { !stopped[head.spool] && heads[head.spool] == head.position }

    private func waitsForAnother(_ record: Record) -> Bool {
        record.dependencies.contains { (waiting[$0] ?? 0) > 0 && $0 != record.id }
    }
}

extension SpoolOrder where Record == SpooledRecord {
    /// The order of spools read for ingestion, their names ranked as spool
    /// names sort.
    init(_ spools: [[SpooledRecord]]) {
        let hexes = spools.map { $0.first?.spool.hex ?? "" }
        var names = Array(repeating: 0, count: spools.count)
        for (rank, index) in hexes.indices.sorted(by: { hexes[$0] < hexes[$1] }).enumerated() { names[index] = rank }
        self.init(spools, names: names)
    }
}
