/// The key of a record: 1 to ``maximumLength`` arbitrary bytes (the format
/// reserves the empty key for the engine's markers, so an append refuses it).
///
/// The index keeps one entry per live key, so keys are stored compactly:
/// keys of up to 23 bytes (a UUID plus a one-byte prefix, say) live inline
/// in the 32-byte value and cost no allocation; longer keys are kept in a
/// heap array.
public struct LogKey: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The longest key accepted by an append, in bytes.
    public static let maximumLength = 1024

    /// Keys of up to this many bytes are stored inline.
    static let inlineCapacity = 23

    // Inline storage: up to 23 bytes in w0...w2, the length in the top byte
    // of w2. Long keys: `heap` holds the bytes, and the words are zero.
    private var w0: UInt64 = 0
    private var w1: UInt64 = 0
    private var w2: UInt64 = 0
    private var heap: [UInt8]? = nil

    /// A key made of `bytes`.
    public init<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        let array = Array(bytes)
        if array.count <= Self.inlineCapacity {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                raw.copyBytes(from: array)
                raw[23] = UInt8(array.count)
            }
            (w0, w1, w2) = words
        } else {
            heap = array
        }
    }

    /// A key made of the bytes in `buffer` (copied).
    public init(_ buffer: UnsafeRawBufferPointer) {
        if buffer.count <= Self.inlineCapacity {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            Swift.withUnsafeMutableBytes(of: &words) { raw in
                raw.copyMemory(from: buffer)
                raw[23] = UInt8(buffer.count)
            }
            (w0, w1, w2) = words
        } else {
            heap = Array(buffer)
        }
    }

    /// A key made of the UTF-8 bytes of `string`.
    public init(_ string: String) {
        var string = string
        self = string.withUTF8 { LogKey(UnsafeRawBufferPointer($0)) }
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The number of bytes in the key.
    public var count: Int {
        if let heap { return heap.count }
        return Int(w2 >> 56)
    }

    /// The key's bytes.
    public var bytes: [UInt8] {
        if let heap { return heap }
        return withUnsafeBytes { Array($0) }
    }

    /// Calls `body` with the key's bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let heap { return try heap.withUnsafeBytes(body) }
        var words = (w0, w1, w2)
        let length = count
        return try Swift.withUnsafeBytes(of: &words) { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[..<length]))
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

    public static func == (lhs: LogKey, rhs: LogKey) -> Bool {
        lhs.w0 == rhs.w0 && lhs.w1 == rhs.w1 && lhs.w2 == rhs.w2 && lhs.heap == rhs.heap
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(w0)
        hasher.combine(w1)
        hasher.combine(w2)
        if let heap { hasher.combine(heap) }
    }

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
        if heap != nil {
            var hasher = Hasher()
            hasher.combine(seed)
            hash(into: &hasher)
            return hasher.finalize()
        }
        var x = (UInt64(bitPattern: Int64(seed)) ^ Self.processHashKey) &+ 0x9E37_79B9_7F4A_7C15
        x = Self.mix(x ^ w0)
        x = Self.mix(x ^ w1)
        x = Self.mix(x ^ w2)
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
