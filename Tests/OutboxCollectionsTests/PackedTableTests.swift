import CLITestSupport
import PropertyBased
import Testing

import OutboxCollections

/// The packed table against a `Dictionary`: random insertions, updates,
/// in-place changes and removals (the last exercise the slot shifting and
/// the reuse of freed positions), with growth from empty.
@Suite("Packed table", .propertySeedFromEnvironment)
struct PackedTableTests {
    enum Operation: Sendable {
        case set(key: Int, value: Int)
        case insert(key: Int, value: Int)
        case modify(key: Int, by: Int)
        case remove(key: Int)
        case snapshot
    }

    static let operation = Gen<Operation>.frequency(
        (5, zip(Gen.int(in: 0...300), Gen.int(in: 0...200_000)).map { Operation.set(key: $0, value: $1) }),
        (3, zip(Gen.int(in: 0...300), Gen.int(in: 0...200_000)).map { Operation.insert(key: $0, value: $1) }),
        (2, zip(Gen.int(in: 0...300), Gen.int(in: 1...9)).map { Operation.modify(key: $0, by: $1) }),
        (4, Gen.int(in: 0...300).map { Operation.remove(key: $0) }),
        (1, Gen.always(Operation.snapshot))
    )

    @Test("agrees with a dictionary, and a copy of its elements does not change with it")
    func agreesWithDictionary() async {
        await propertyCheck(count: modelCases(200), input: Self.operation.array(of: 1...600)) { operations in
            var table = PackedTable<String, Int>()
            var model: [String: Int] = [:]
            var snapshots: [(PackedTable<String, Int>.DenseElements, [String: Int])] = []
            for operation in operations {
                switch operation {
                case .set(let key, let value):
                    // Long keys (past a String's 15 inline bytes: on the heap) now and then.
                    let name = String(key % 7 == 0 ? String(repeating: "k", count: 30) + "\(key)" : "k\(key)")
                    #expect(table.updateValue(value, forKey: name) == model.updateValue(value, forKey: name))
                case .insert(let key, let value):
                    let name = String("k\(key)")
                    let absent = model[name] == nil
                    if absent { model[name] = value }
                    #expect(table.insertIfAbsent(value, forKey: name) == absent)
                case .modify(let key, let amount):
                    let name = String("k\(key)")
                    let changed = table.modifyValue(forKey: name) { value -> Int in
                        value += amount
                        return value
                    }
                    if model[name] != nil { model[name]! += amount }
                    #expect(changed == model[name])
                case .remove(let key):
                    let name = String("k\(key)")
                    #expect(table.removeValue(forKey: name) == model.removeValue(forKey: name))
                case .snapshot:
                    snapshots.append((table.denseElements, model))
                }
                #expect(table.count == model.count)
            }
            for (key, value) in model { #expect(table[key] == value) }
            #expect(Set(table.keys) == Set(model.keys))
            #expect(table.values.sorted() == model.values.sorted())
            for (elements, then) in snapshots {
                var seen: [String: Int] = [:]
                elements.forEach { seen[$0.key] = $0.value }
                #expect(seen == then, "a copy taken earlier changed")
            }
            for key in (0...300).map({ String("absent-\($0)") }) { #expect(!table.contains(key)) }
        }
    }

    @Test("a table grown to 200,000 keys finds every one, and sizes itself once when told")
    func large() {
        var table = PackedTable<String, UInt32>(minimumCapacity: 200_000)
        let capacity = table.capacity
        for index in 0..<200_000 { table[String("E\(index)")] = UInt32(index) }
        #expect(table.capacity == capacity)
        #expect(table.count == 200_000)
        for index in stride(from: 0, to: 200_000, by: 97) { #expect(table[String("E\(index)")] == UInt32(index)) }
        for index in 0..<100_000 { table[String("E\(index)")] = nil }
        #expect(table.count == 100_000)
        #expect(table[String("E99999")] == nil && table[String("E100000")] == 100_000)
    }
}
