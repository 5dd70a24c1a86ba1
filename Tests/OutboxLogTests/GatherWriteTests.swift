import Foundation
import OutboxLog
import OutboxLogTesting
import Testing

/// A value written from parts (`LogWrite.value(_:parts:)`) is one value like
/// any other: the same bytes on disk, the same CRC, the same reads.
@Suite("Gather writes")
struct GatherWriteTests {
    @Test("a value written from parts reads back joined, before and after a reopen, and frames like the joined value")
    func partsRoundTrip() async throws {
        let directory = TemporaryDirectory()
        let body = [UInt8].pattern(300, seed: 7)
        let splits: [[ArraySlice<UInt8>]] = [
            [body[..<18], [9, 9, 9, 9, 9, 9, 9, 9][...], body[26...]],
            [body[...]],
            [[][...], body[..<1], [][...], body[1...]],
            [],
        ]
        let log = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        var expected: [LogKey: [UInt8]] = [:]
        for (index, parts) in splits.enumerated() {
            let key = LogKey("k\(index)")
            let write = LogWrite.value(key, parts: parts, expiresAt: Date(timeIntervalSince1970: 4_000_000_000))
            let joined = Array(parts.joined())
            #expect(write.payloadCount == joined.count)
            #expect(write.payload == joined)
            #expect(write.frameSize == LogWrite.value(key, joined, expiresAt: write.expiresAt).frameSize)
            try await log.append([write, .annotation(key, [UInt8(index)])], durability: .durable)
            expected[key] = joined
        }
        for (key, value) in expected { #expect(try await log.get(key)?.value == value) }
        try await log.close()

        let reopened = try await OutboxLog.open(at: directory.path, configuration: smallSegments())
        #expect(reopened.recoveryReport.isClean)
        for (key, value) in expected { #expect(try await reopened.get(key)?.value == value) }
        try await reopened.close()
    }

    @Test("writes of the same bytes are equal and hash alike however their payloads are split")
    func equalityIgnoresTheSplit() {
        let bytes: [UInt8] = [1, 2, 3, 4, 5]
        let whole = LogWrite.value("k", bytes)
        let split = LogWrite.value("k", parts: [bytes[..<2], bytes[2...]])
        let other = LogWrite.value("k", parts: [bytes[..<2], [9][...]])
        #expect(whole == split)
        #expect(whole.hashValue == split.hashValue)
        #expect(Set([whole, split]).count == 1)
        #expect(whole != other)
        #expect(LogWrite.value("k", parts: []) == LogWrite.value("k", []))
        var changed = split
        changed.payload = [7]
        #expect(changed == LogWrite.value("k", [7]))
    }

    @Test("a record of parts too large for the log is refused like any other, and nothing is written")
    func partsAreValidated() async throws {
        let directory = TemporaryDirectory()
        var configuration = smallSegments()
        configuration.maximumRecordSize = 256
        let log = try await OutboxLog.open(at: directory.path, configuration: configuration)
        let half = [UInt8](repeating: 1, count: 200)
        let refused = await #expect(throws: OutboxLogError.self) {
            try await log.append([.value("big", parts: [half[...], half[...]])], durability: .durable)
        }
        #expect(refused?.code == .recordTooLarge)
        #expect(!log.contains("big"))
        try await log.put("after", [1], durability: .durable)
        #expect(try await log.get("after")?.value == [1])
        try await log.close()
    }
}
