import Foundation
import OutboxLog
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keys may be chosen by a remote client (an embedding server keying the log
/// by request ids, the key store of an earlier version keying it by
/// Idempotency-Key): the index's hash of a key must depend on a secret drawn
/// per process, so which keys share a bucket cannot be worked out, and
/// flooded, from outside the process. A dictionary's own seed is not such a
/// secret: it is the address of its storage.
@Suite("LogKey hashing")
struct LogKeyHashTests {
    @Test("the same key under the same table seed hashes differently in another process (short and long keys)")
    func seededPerProcess() async {
        let short = LogKey("client-chosen-key")._rawHashValue(seed: 0)
        let long = LogKey(String(repeating: "k", count: 64))._rawHashValue(seed: 0)
        await #expect(processExitsWith: .success) { [short = short as Int, long = long as Int] in
            // Equal by chance with probability 2^-64 each.
            if LogKey("client-chosen-key")._rawHashValue(seed: 0) == short { exit(1) }
            if LogKey(String(repeating: "k", count: 64))._rawHashValue(seed: 0) == long { exit(2) }
            exit(0)
        }
    }

    @Test("within a process a key's hash is stable, and equal keys hash alike")
    func stableWithinProcess() {
        let keys = [
            "", "a", "client-chosen-key", String(repeating: "x", count: 22), String(repeating: "y", count: 23),
            String(repeating: "z", count: 24),
        ]
        for key in keys {
            #expect(LogKey(key)._rawHashValue(seed: 42) == LogKey(Array(key.utf8))._rawHashValue(seed: 42))
            #expect(LogKey(key).hashValue == LogKey(key).hashValue)
        }
        var table: [LogKey: Int] = [:]
        for (index, key) in keys.enumerated() { table[LogKey(key)] = index }
        for (index, key) in keys.enumerated() { #expect(table[LogKey(key)] == index) }
    }
}
