import OutboxLog
import OutboxLogTesting

/// Generates a workload from a seed and a stream number: the worker process
/// and the verifying parent generate the same steps without exchanging them.
///
/// Every value and annotation is unique to its stream, step and position in
/// a batch (``TortureValue``), so the state after any prefix of any workload
/// is unambiguous, and a byte returned by the log can be traced to the one
/// step that wrote it.
public struct TortureWorkload: Sendable, Hashable {
    /// The mix of steps.
    public struct Profile: Sendable, Hashable {
        /// Distinct keys (few, so values are overwritten and compaction has
        /// dead records to drop).
        public var keys = 48
        /// Percentages of each kind of step; the rest are puts.
        public var annotatePercent = 16
        public var deletePercent = 14
        public var batchPercent = 9
        public var compactPercent = 2
        public var syncPercent = 1
        public var flushPercent = 1
        /// Out of 100: values of 4–16 KiB, which fill a small segment and
        /// force a roll.
        public var largeValuePercent = 5
        /// Durability draws out of 10: buffered, then written; the rest durable.
        public var bufferedInTen = 4
        public var writtenInTen = 4

        public init() {}

        /// For the kill loop: many compactions (to stop one midway), and few
        /// `durable` appends — a kill keeps `written` ones just the same,
        /// and every sync spent is a kill cycle fewer.
        public static var compactionHeavy: Profile {
            var profile = Profile()
            profile.compactPercent = 6
            profile.largeValuePercent = 8
            profile.bufferedInTen = 4
            profile.writtenInTen = 5
            return profile
        }
    }

    public let seed: UInt64
    /// Which workload of the run: every cycle (and round) has its own.
    public let stream: UInt64
    public let count: Int
    public let profile: Profile

    public init(seed: UInt64, stream: UInt64, count: Int, profile: Profile = Profile()) {
        self.seed = seed
        self.stream = stream
        self.count = count
        self.profile = profile
    }

    /// The key numbered `n`: short keys stored inline, and every eighth one
    /// longer than 22 bytes (the index keeps those on the heap).
    public static func key(_ n: Int) -> LogKey {
        n % 8 == 7 ? LogKey("long-key-for-the-heap-path-\(n)") : LogKey("k\(n)")
    }

    public func operations() -> [TortureOperation] {
        var random = SplitMix64.derived(seed: seed, stream: stream)
        let profile = self.profile
        var result: [TortureOperation] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            func key() -> LogKey { Self.key(random.next(below: profile.keys)) }
            func durability() -> Durability {
                let pick = random.next(below: 10)
                return pick < profile.bufferedInTen ? .buffered : pick < profile.bufferedInTen + profile.writtenInTen ? .written : .durable
            }
            func value(_ element: Int) -> [UInt8] {
                let size =
                    random.next(below: 100) < profile.largeValuePercent
                    ? 4096 + random.next(below: 12288) : random.next(below: 300)
                return TortureValue.make(stream: stream, step: index, element: element, size: size)
            }
            var roll = random.next(below: 100)
            func take(_ percent: Int) -> Bool {
                if roll < percent { return true }
                roll -= percent
                return false
            }
            if take(profile.annotatePercent) {
                result.append(.annotateOrPut(key(), value(0), durability()))
            } else if take(profile.deletePercent) {
                result.append(.delete(key(), durability()))
            } else if take(profile.batchPercent) {
                let width = 2 + random.next(below: 5)
                var items: [TortureOperation.BatchItem] = []
                for element in 0..<width {
                    let pick = random.next(below: 10)
                    let batchKey = key()
                    items.append(
                        pick < 6 ? .value(batchKey, value(element))
                            : pick < 8 ? .annotateOrValue(batchKey, value(element)) : .tombstone(batchKey))
                }
                result.append(.batch(items, durability()))
            } else if take(profile.compactPercent) {
                result.append(.compact)
            } else if take(profile.syncPercent) {
                result.append(.sync)
            } else if take(profile.flushPercent) {
                result.append(.flush)
            } else {
                result.append(.put(key(), value(0), durability()))
            }
        }
        return result
    }
}

/// The bytes of torture values: a header naming the step that wrote them,
/// then filler that depends on the header, so any change of any byte makes
/// a value that no step wrote.
public enum TortureValue {
    /// The smallest value: magic (2) + stream (8) + step (4) + element (2).
    public static let headerSize = 16

    public static func make(stream: UInt64, step: Int, element: Int, size: Int) -> [UInt8] {
        var bytes: [UInt8] = [0x54, 0x56]  // "TV"
        bytes.reserveCapacity(max(size, headerSize))
        withUnsafeBytes(of: stream.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: step).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt16(truncatingIfNeeded: element).littleEndian) { bytes += $0 }
        var filler = SplitMix64.derived(seed: stream, stream: UInt64(step) << 16 | UInt64(element & 0xFFFF))
        let total = max(size, headerSize)
        while bytes.count < total {
            var word = filler.next()
            for _ in 0..<min(8, total - bytes.count) {
                bytes.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return bytes
    }
}
