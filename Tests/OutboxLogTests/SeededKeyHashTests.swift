import OutboxLog
import Testing

/// The index hashes keys a client may choose (an idempotency key, a
/// coalescing key): with a mixer anyone can compute offline, a peer who picks
/// keys can make every key land in one bucket and the table quadratic. The
/// mixer must take a secret, per-process random key.
@Suite("Seeded key hashing")
struct SeededKeyHashTests {
    /// The mixer without a secret (what an attacker can compute offline).
    static func unkeyed(_ key: LogKey, seed: Int) -> Int {
        func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            key.withUnsafeBytes { raw.copyMemory(from: $0) }
            raw[23] = UInt8(key.count)
        }
        var x = UInt64(bitPattern: Int64(seed)) &+ 0x9E37_79B9_7F4A_7C15
        x = mix(x ^ words.0)
        x = mix(x ^ words.1)
        x = mix(x ^ words.2)
        return Int(truncatingIfNeeded: x)
    }

    @Test("a short key's hash is not the value an unkeyed mixer gives, for any table seed")
    func shortKeysAreKeyed() {
        let keys: [LogKey] = (0..<16).map { LogKey("idempotency-\($0)") }
        for seed in [0, 1, 42, Int.max] {
            let predictable = keys.filter { $0._rawHashValue(seed: seed) == Self.unkeyed($0, seed: seed) }
            #expect(predictable.isEmpty, "seed \(seed): \(predictable.count) of \(keys.count) hashes computable offline")
        }
    }

    @Test("equal keys still hash equally, and a dictionary of client keys works")
    func equalKeysHashEqually() {
        var table: [LogKey: Int] = [:]
        for index in 0..<1000 { table[LogKey("k\(index)")] = index }
        #expect(LogKey("k7")._rawHashValue(seed: 9) == LogKey("k7")._rawHashValue(seed: 9))
        #expect(table[LogKey("k999")] == 999)
        #expect(table.count == 1000)
    }
}
