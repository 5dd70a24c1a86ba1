import Foundation
import OutboxLocking

import SystemPackage

/// Version-4 UUIDs and their text, without the costs Foundation's `UUID()`
/// and `uuidString` carry on Linux (two `getrandom` calls per UUID, a C
/// formatting call per string; each enqueue mints two UUIDs and prints one).
package enum FastUUID {
    /// A random (version 4, RFC 9562) UUID from the system's CSPRNG.
    package static func random() -> UUID {
        var bytes = pool.withLock { $0.take16() }
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // variant 10
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }

    /// Random bytes drawn from the system generator 4 KiB at a time: one
    /// system call per 256 UUIDs instead of two per UUID.
    private struct RandomPool {
        var words: [UInt64] = []
        var next = 0

        mutating func take16() -> (UInt64, UInt64) {
            if next + 2 > words.count {
                words = Self.systemRandomWords(512)
                next = 0
            }
            defer { next += 2 }
            return (words[next], words[next + 1])
        }

        /// `count` words from the system's CSPRNG in one call; word by word
        /// from the standard library if that fails.
        static func systemRandomWords(_ count: Int) -> [UInt64] {
            var words = [UInt64](repeating: 0, count: count)
            #if canImport(Darwin)
            words.withUnsafeMutableBytes { arc4random_buf($0.baseAddress, $0.count) }
            return words
            #else
            // One read of the kernel's CSPRNG (the pool getrandom(2) draws
            // from; it never blocks once the system has booted).
            if let urandom = FastUUID.urandom,
                let read = try? words.withUnsafeMutableBytes({ try urandom.read(into: $0) }),
                read == count * 8
            {
                return words
            }
            #endif
            var generator = SystemRandomNumberGenerator()
            return (0..<count).map { _ in generator.next() }
        }
    }

    private static let pool = Locked(RandomPool())

    #if !canImport(Darwin)
    /// Opened once, never closed: the pool refills from it for the life of the process.
    private static let urandom = try? FileDescriptor.open("/dev/urandom", .readOnly, options: [.closeOnExec])
    #endif

    /// `uuid` as `uuidString` spells it: upper-case hex in 8-4-4-4-12 groups.
    package static func string(_ uuid: UUID) -> String {
        let digits: StaticString = "0123456789ABCDEF"
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = digits.utf8Start[Int(bytes[index] >> 4)]
                    text[position + 1] = digits.utf8Start[Int(bytes[index] & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }
}
