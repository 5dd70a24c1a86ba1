import OutboxLog
import Testing

@testable import OutboxTorture

/// The prefix oracle must catch what it exists to catch: a lost
/// acknowledgement, a hole, a reordering, an invented value.
@Suite("Prefix oracle")
struct OracleTests {
    static func value(_ step: Int) -> [UInt8] { TortureValue.make(stream: 1, step: step, element: 0, size: 20) }

    /// put a (written), put b (buffered), put c (durable), put a (buffered), delete b (written)
    static let history: [TortureOperation] = [
        .put("a", value(0), .written), .put("b", value(1), .buffered), .put("c", value(2), .durable),
        .put("a", value(3), .buffered), .delete("b", .written),
    ]
    static let oracle = PrefixOracle(start: StateModel(), operations: history)

    @Test("every prefix at or above what the acknowledgements promise is accepted")
    func acceptsPrefixes() {
        // After 4 acknowledgements, a kill keeps at least step 2 (durable, covers 0...2).
        for length in 3...5 {
            #expect(Self.oracle.check(Self.oracle.states[length], acknowledged: 4, keeping: .written) == .prefix(length))
        }
        // A power loss keeps at least the durable step's prefix too.
        #expect(Self.oracle.minimumPrefix(acknowledged: 5, keeping: .durable) == 3)
        #expect(Self.oracle.minimumPrefix(acknowledged: 5, keeping: .written) == 5)
    }

    @Test("a lost acknowledged step is a violation")
    func lostAcknowledgement() {
        guard case .violation(let detail) = Self.oracle.check(Self.oracle.states[2], acknowledged: 4, keeping: .written) else {
            Issue.record("losing a durable acknowledgement was accepted")
            return
        }
        #expect(detail.contains("lost acknowledged steps"))
    }

    static func isViolation(_ verdict: PrefixOracle.Verdict) -> Bool {
        if case .violation = verdict { return true }
        return false
    }

    @Test("a hole (a later step without an earlier one) is a violation")
    func hole() {
        var holed = Self.oracle.states[3]
        holed.entries["b"] = nil  // step 2 (put c) is there, step 1 (put b) is not
        #expect(Self.isViolation(Self.oracle.check(holed, acknowledged: 3, keeping: .buffered)))
    }

    @Test("a reordering (step 4 applied, step 3 not) is a violation")
    func reordering() {
        var reordered = Self.oracle.states[3]
        reordered.entries["b"] = nil  // step 4 (delete b) without step 3 (put a)
        #expect(Self.isViolation(Self.oracle.check(reordered, acknowledged: 4, keeping: .buffered)))
    }

    @Test("an invented key or value, or one from an earlier step, is a violation")
    func invention() {
        var invented = Self.oracle.states[5]
        invented.entries["z"] = StateModel.Entry(value: [1, 2, 3])
        #expect(Self.isViolation(Self.oracle.check(invented, acknowledged: 5, keeping: .buffered)))
        var stale = Self.oracle.states[5]
        stale.entries["a"] = StateModel.Entry(value: Self.value(0))  // step 3 overwrote it
        #expect(Self.isViolation(Self.oracle.check(stale, acknowledged: 5, keeping: .buffered)))
    }

    @Test("a delete of a key with no value promises nothing: it writes nothing")
    func emptyDeletePromisesNothing() {
        let oracle = PrefixOracle(
            start: StateModel(), operations: [.put("a", Self.value(0), .buffered), .delete("nothing", .durable)])
        #expect(oracle.promises == [nil, nil])
        #expect(oracle.check(oracle.states[0], acknowledged: 2, keeping: .durable) == .prefix(0))
    }

    @Test("a compaction is no durability barrier; sync and flush are")
    func barriers() {
        #expect(TortureOperation.compact.promise(appended: false) == nil)
        #expect(TortureOperation.sync.promise(appended: false) == .durable)
        #expect(TortureOperation.flush.promise(appended: false) == .written)
    }
}
