import Foundation
import OutboxLog
import Testing

/// `OutboxLog.values(_:)`: the values of keys without their annotations.
@Suite("Reading values alone")
struct ValuesReadTests {
    @Test("values(_:) reads each value, leaves annotations out, and does not make a buffered annotation be written")
    func valuesWithoutAnnotations() async throws {
        let directory = TemporaryDirectory()
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        try await log.put("entry", .pattern(200, seed: 1), durability: .written)
        try await log.put("other", .pattern(50, seed: 2), durability: .written)
        try await log.annotate("entry", [7], durability: .buffered)
        let annotated = log.statistics.nextSequence - 1
        #expect(log.statistics.writtenSequence < annotated)

        let values = try await log.values(["entry", "absent", "other"])
        #expect(values.map { $0?.value } == [.pattern(200, seed: 1), nil, .pattern(50, seed: 2)])
        #expect(values.allSatisfy { $0?.annotation == nil })
        // Still only in memory: reading the values did not write it.
        #expect(log.statistics.writtenSequence < annotated)

        // A read with annotations writes it first, and returns it.
        let entry = try #require(try await log.get(["entry"])[0])
        #expect(entry.annotation?.payload == [7])
        #expect(log.statistics.writtenSequence >= annotated)
        try await log.close()
    }
}
