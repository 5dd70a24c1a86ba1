import CLITestSupport
import Foundation
import Outbox
import PropertyBased
import Testing

/// ``SpoolOrder`` against its rule written out naively: rank every spool's
/// head, take the first whose dependencies wait in no spool, else the
/// first. The heap must give the same records in the same order, whatever
/// the spools, ties, dependencies and stops.
@Suite("The order of spooled entries against its naive rule", .propertySeedFromEnvironment)
struct SpoolOrderTests {
    struct Record: SpoolOrdered, Equatable, CustomStringConvertible {
        var id: OutboxEntryID?
        var createdAt: Int64
        var dependencies: [OutboxEntryID]
        /// Where it was spooled, to tell records apart in a failure.
        var label: String
        var description: String { label }
    }

    /// The rule as OUTBOX.md states it, at O(s log s) per record.
    struct NaiveOrder {
        var spools: [[Record]]
        var names: [Int]
        var heads: [Int]
        var stopped: Set<Int> = []

        init(_ spools: [[Record]], names: [Int]) {
            self.spools = spools
            self.names = names
            heads = Array(repeating: 0, count: spools.count)
        }

        func waiting(_ id: OutboxEntryID) -> Bool {
            spools.indices.contains { index in
                !stopped.contains(index) && spools[index][heads[index]...].contains { $0.id == id }
            }
        }

        func next() -> (Int, Record)? {
            let candidates = spools.indices.filter { !stopped.contains($0) && heads[$0] < spools[$0].count }
                .map { ($0, spools[$0][heads[$0]]) }
                .sorted { a, b in a.1.createdAt != b.1.createdAt ? a.1.createdAt < b.1.createdAt : names[a.0] < names[b.0] }
            return candidates.first { _, record in
                !record.dependencies.contains { $0 != record.id && waiting($0) }
            } ?? candidates.first
        }
    }

    /// Spools from `draws`: each draw places one record (its spool, its
    /// time, whether it reads as an entry, reuses an id or depends on one).
    static func spools(from draws: [Int]) -> [[Record]] {
        let count = 1 + (draws.first ?? 0) % 7
        var spools = Array(repeating: [Record](), count: count)
        var ids: [OutboxEntryID] = []
        for (index, draw) in draws.enumerated() {
            let spool = draw % count
            let label = "spool \(spool) #\(spools[spool].count)"
            guard draw % 23 != 0 else {
                spools[spool].append(Record(id: nil, createdAt: .min, dependencies: [], label: label + " (unreadable)"))
                continue
            }
            let id = draw % 17 == 0 && !ids.isEmpty ? ids[draw % ids.count] : OutboxEntryID()
            ids.append(id)
            var dependencies: [OutboxEntryID] = []
            if (draw / 11) % 3 == 0, !ids.isEmpty { dependencies.append(ids[(draw / 13 + index) % ids.count]) }
            spools[spool].append(Record(id: id, createdAt: Int64((draw / 7) % 5), dependencies: dependencies, label: label))
        }
        return spools
    }

    @Test("the heap gives the naive rule's records, in its order, through consumes and stops")
    func agreesWithNaiveRule() async {
        let input = zip(Gen.int(in: 0...9_999).array(of: 0...80), Gen.int(in: 0...99).array(of: 0...80))
        await propertyCheck(count: modelCases(400), input: input) { draws, stops in
            let spools = Self.spools(from: draws)
            let names = Array(spools.indices.reversed())
            var order = SpoolOrder(spools, names: names)
            var naive = NaiveOrder(spools, names: names)
            var step = 0
            while true {
                let expected = naive.next()
                let actual = order.next()
                #expect(actual?.0 == expected?.0 && actual?.1 == expected?.1, "step \(step): \(String(describing: actual)) vs \(String(describing: expected))")
                guard let (index, _) = expected, actual?.0 == index else { return }
                if step < stops.count, stops[step] < 8 {
                    let kept = order.stop(index)
                    naive.stopped.insert(index)
                    #expect(kept == spools[index].count - naive.heads[index])
                } else {
                    order.consume(index)
                    naive.heads[index] += 1
                }
                step += 1
            }
        }
    }

    @Test("thousands of spools of a few entries each come out whole and in order")
    func manySpools() {
        // Time order across spools: spool i's entries were created at i, i + 1, ...
        let spools = (0..<3_000).map { spool in
            (0..<3).map { Record(id: OutboxEntryID(), createdAt: Int64(spool + $0), dependencies: [], label: "\(spool).\($0)") }
        }
        var order = SpoolOrder(spools, names: Array(spools.indices))
        var times: [Int64] = []
        while let (index, record) = order.next() {
            times.append(record.createdAt)
            order.consume(index)
        }
        #expect(times.count == 9_000)
        #expect(times == times.sorted())
    }
}
