import OutboxLog
import Testing

/// The index keeps one `LogKey` per live key: its size is the index's
/// memory per key (Docs/FORMAT.md, "Memory cost of the index"). Keys of up
/// to 22 bytes live inline, longer ones on the heap; the two must be
/// indistinguishable through the API.
@Suite("LogKey storage")
struct LogKeyStorageTests {
    @Test("a key is three words: 24 bytes, the index's element 48")
    func threeWords() {
        #expect(MemoryLayout<LogKey>.size == 24)
        #expect(MemoryLayout<LogKey>.stride == 24)
    }

    @Test("around the inline limit, every length round-trips its bytes, counts, compares and orders as bytes do")
    func everyLengthRoundTrips() {
        var keys: [LogKey] = []
        for length in [1, 2, 7, 8, 9, 15, 16, 17, 20, 21, 22, 23, 24, 31, 64, LogKey.maximumLength] {
            for fill: UInt8 in [0x00, 0x7F, 0xFF] {
                let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ fill }
                let key = LogKey(bytes)
                #expect(key.count == length)
                #expect(key.bytes == bytes)
                #expect(key.withUnsafeBytes { Array($0) } == bytes)
                #expect(bytes.withUnsafeBytes { LogKey($0) } == key)
                keys.append(key)
            }
        }
        // A key and the same bytes one longer (a trailing zero) differ:
        // the count is part of the key, not only its padding.
        #expect(LogKey([1, 2, 3]) != LogKey([1, 2, 3, 0]))
        #expect(LogKey([UInt8](repeating: 0, count: 22)) != LogKey([UInt8](repeating: 0, count: 23)))
        for left in keys {
            for right in keys {
                #expect((left == right) == (left.bytes == right.bytes))
                #expect((left < right) == left.bytes.lexicographicallyPrecedes(right.bytes))
                if left == right { #expect(left.hashValue == right.hashValue) }
            }
        }
        #expect(Set(keys).count == Set(keys.map(\.bytes)).count)
    }
}
