import CLITestSupport
import PropertyBased
import Testing

import OutboxCollections

/// A table loaded at once (`init(loadingUnique:_:)`) holds exactly what
/// one insertion per element would, refuses a repeated key, and stays a
/// working table afterwards: sizes on both sides of the one where loading
/// by regions starts (8,192 slots), keys drawn so that some repeat.
@Suite("Packed table loading", .propertySeedFromEnvironment)
struct PackedTableLoadingTests {
    struct Case: Sendable {
        var count: Int
        var offset: Int
        /// An index whose key the last element repeats (none if out of range).
        var repeated: Int
        var removals: [Int]

        /// Distinct keys (an odd multiplier is a bijection modulo 2⁴⁰), the
        /// last one a repeat if `repeated` names an earlier element.
        var keys: [String] {
            var numbers = (0..<count).map { ($0 &* 2_654_435_761 &+ offset) & (1 << 40 - 1) }
            if repeated >= 0, repeated < count - 1 { numbers[count - 1] = numbers[repeated] }
            return numbers.map { "k\($0)" }
        }
    }

    static let loadCase = zip(
        Gen.int(in: 0...20_000), Gen.int(in: 0...1_000_000), Gen.int(in: -20_000...20_000),
        Gen.int(in: 0...20_000).array(of: 0...200)
    ).map { Case(count: $0, offset: $1, repeated: $2, removals: $3) }

    @Test("agrees with a dictionary, or is nil when a key repeats; removals and insertions work after it")
    func agreesWithDictionary() async {
        await propertyCheck(count: modelCases(30), input: Self.loadCase) { loadCase in
            let keys = loadCase.keys
            var asked: [Int] = []
            let loaded = PackedTable<String, Int>(loadingUnique: keys.count) { index in
                asked.append(index)
                return .init(key: keys[index], value: index)
            }
            #expect(asked == Array(0..<asked.count), "elements asked for in order, once each")
            guard Set(keys).count == keys.count else {
                #expect(loaded == nil, "\(keys.count) keys, some repeated")
                return
            }
            guard var table = loaded else {
                Issue.record("\(keys.count) distinct keys refused")
                return
            }
            #expect(asked.count == keys.count)
            var model = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
            #expect(table.count == model.count)
            for (key, value) in model { #expect(table[key] == value) }
            for removal in loadCase.removals {
                let key = keys.isEmpty ? "none" : keys[removal % keys.count]
                #expect(table.removeValue(forKey: key) == model.removeValue(forKey: key))
                #expect(table.updateValue(-removal, forKey: "new\(removal)") == model.updateValue(-removal, forKey: "new\(removal)"))
            }
            #expect(table.count == model.count)
            for (key, value) in model { #expect(table[key] == value) }
            #expect(!table.contains("absent"))
        }
    }

    @Test("an error thrown by the element function is the load's")
    func errorPropagates() {
        struct Stop: Error {}
        for count in [100, 20_000] {
            #expect(throws: Stop.self) {
                _ = try PackedTable<Int, Int>(loadingUnique: count) { index throws(Stop) in
                    if index == count / 2 { throw Stop() }
                    return .init(key: index, value: index)
                }
            }
        }
    }
}
