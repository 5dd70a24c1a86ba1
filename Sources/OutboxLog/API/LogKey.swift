/// The key of a record: 1 to ``maximumLength`` arbitrary bytes (the format
/// reserves the empty key for the engine's markers, so an append refuses it).
///
/// The index keeps one entry per live key, so keys are stored compactly:
/// keys of up to 22 bytes (a UUID plus a one-byte prefix, a 96-bit digest
/// plus a prefix) live inline in the 24-byte value and cost no allocation;
/// longer keys are kept in a heap array.
public struct LogKey: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The longest key accepted by an append, in bytes.
    public static let maximumLength = 1024

    /// Keys of up to this many bytes are stored inline.
    static let inlineCapacity = 22

    /// Inline: the bytes in `low`, `middle` and the 6 bytes of `high` and
    /// `last`, zero-padded, their count in `count` (23 bytes: the enum's tag
    /// takes the 24th, so the whole key is three words). Heap: the bytes.
    private enum Storage: Hashable, Sendable {
        case inline(low: UInt64, middle: UInt64, high: UInt32, last: UInt16, count: UInt8)
        case heap([UInt8])
    }

    private var storage: Storage

    /// The inline layout as three words: the bytes, then the count in the
    /// top byte of the third (the byte after the 22 of the key).
    private typealias Words = (UInt64, UInt64, UInt64)

    private init(words: Words) {
        storage = .inline(
            low: words.0, middle: words.1, high: UInt32(truncatingIfNeeded: words.2),
            last: UInt16(truncatingIfNeeded: words.2 >> 32), count: UInt8(truncatingIfNeeded: words.2 >> 48))
    }

    /// A key made of `bytes`.
    public init<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        let array = Array(bytes)
        self = array.withUnsafeBytes { LogKey($0) }
    }

    /// A key made of the bytes in `buffer` (copied).
    public init(_ buffer: UnsafeRawBufferPointer) {
        if buffer.count > Self.inlineCapacity {
            self.init(heap: Array(buffer))
        } else {
            var words: Words = (0, 0, 0)
            Swift.withUnsafeMutableBytes(of: &words) { raw in
                raw.copyMemory(from: buffer)
                raw[Self.inlineCapacity] = UInt8(buffer.count)
            }
            self.init(words: words)
        }
    }

    private init(heap bytes: [UInt8]) { storage = .heap(bytes) }

    /// A key made of the UTF-8 bytes of `string`.
    public init(_ string: String) {
        var string = string
        self = string.withUTF8 { LogKey(UnsafeRawBufferPointer($0)) }
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The number of bytes in the key.
    public var count: Int {
        switch storage {
        case .inline(_, _, _, _, let count): return Int(count)
        case .heap(let bytes): return bytes.count
        }
    }

    /// The key's bytes.
    public var bytes: [UInt8] {
        if case .heap(let bytes) = storage { return bytes }
        return withUnsafeBytes { Array($0) }
    }

    /// The inline key's three words (the bytes and, in the top byte, not
    /// part of them, the count); `nil` for a key on the heap.
    private var words: Words? {
        guard case .inline(let low, let middle, let high, let last, let count) = storage else { return nil }
        return (low, middle, UInt64(high) | UInt64(last) << 32 | UInt64(count) << 48)
    }

    /// Calls `body` with the key's bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .heap(let bytes):
            return try bytes.withUnsafeBytes(body)
        case .inline(let low, let middle, let high, let last, let count):
            var words: Words = (low, middle, UInt64(high) | UInt64(last) << 32)
            return try Swift.withUnsafeBytes(of: &words) { raw in
                try body(UnsafeRawBufferPointer(rebasing: raw[..<Int(count)]))
            }
        }
    }

    /// The key as a string if it is printable UTF-8, else as hexadecimal.
    public var description: String {
        let raw = bytes
        if let text = String(checkedUTF8: raw),
            text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        {
            return text
        }
        return "0x" + raw.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    public static func == (lhs: LogKey, rhs: LogKey) -> Bool { lhs.storage == rhs.storage }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage) }

    /// The index hashes every key on every append and every recovered
    /// record; a full SipHash round (`Hasher`) was a fifth of recovery time.
    /// Inline keys are mixed directly (a multiply–xorshift finalizer, as in
    /// SplitMix64) from a state that starts at ``processHashKey``, 64 random
    /// bits drawn once per process, combined with the dictionary's seed.
    /// The dictionary's seed alone is not a secret (it is its storage's
    /// address), and keys may be chosen by remote clients (a server keying
    /// the log by their request ids): without the process's key, which keys
    /// share a bucket cannot be worked out from outside, so they cannot be
    /// chosen to flood one. Long keys use `Hasher`, seeded per process too.
    public func _rawHashValue(seed: Int) -> Int {
        guard let words else {
            var hasher = Hasher()
            hasher.combine(seed)
            hash(into: &hasher)
            return hasher.finalize()
        }
        var x = (UInt64(bitPattern: Int64(seed)) ^ Self.processHashKey) &+ 0x9E37_79B9_7F4A_7C15
        x = Self.mix(x ^ words.0)
        x = Self.mix(x ^ words.1)
        x = Self.mix(x ^ words.2)
        return Int(truncatingIfNeeded: x)
    }

    /// The secret the inline keys' hash starts from: drawn from the system's
    /// random source once per process, never stored.
    static let processHashKey = UInt64.random(in: .min ... .max)

    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Byte-wise lexicographic order.
    public static func < (lhs: LogKey, rhs: LogKey) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
