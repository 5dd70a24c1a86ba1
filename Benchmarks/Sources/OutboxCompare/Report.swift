import Foundation
import OutboxBenchSupport

/// Everything one run of `outbox-compare` measured.
struct Report: Codable {
    var mode: String
    var command: String
    var machine: MachineDescription
    var settings: Settings
    var comparisons: [Comparison] = []
    var drain: Comparison?
    var recovery: [RecoveryResult] = []
    var depth: [DepthResult] = []
    var producers: [ProducerPoint] = []
    var goals: [Goal] = []
    var notes: [String] = []
    var elapsedSeconds: Double = 0
    var loadAverageAtEnd: String = ""
}

struct Settings: Codable {
    var rounds: Int
    var secondsPerRound: Double
    var warmupSeconds: Double
    var payloadBytes: Int
    /// The bytes one enqueued 256-byte entry takes in our log (frame
    /// included): what the raw loops write per operation.
    var recordBytes: Int
    var drainEntries: Int
    var drainRounds: Int
    var recoverySizes: [Int]
    var depths: [Int]
    var jsonDepths: [Int]
    var producerCounts: [Int]
    var producerRounds: Int
    var producerSeconds: Double
    var sqliteVersion: String
    var sqlitePragmas: [String: String]
}

/// One workload run on several systems, side by side, in rounds.
struct Comparison: Codable {
    var id: String
    var title: String
    var detail: String
    var unit: String
    var results: [ContenderResult]

    func result(_ name: String) -> ContenderResult? { results.first { $0.name == name } }
    var ours: ContenderResult? { results.first { $0.isOurs } }
}

struct ContenderResult: Codable {
    var name: String
    var isOurs: Bool
    /// Median over rounds.
    var throughput: Double
    var roundThroughputs: [Double]
    /// Latency percentiles over every operation of every round, in microseconds.
    var p50Micros: Double?
    var p99Micros: Double?
    /// Ours ÷ this, the median of the per-round ratios (nil for ours).
    var oursOverThis: Double?
    var operations: Int
}

struct RecoveryResult: Codable {
    var records: Int
    var bytes: Int64
    var segments: Int
    var buildSeconds: Double
    /// Median of the warm opens (files in the page cache).
    var warmSeconds: Double
    var warmMBps: Double
    /// One open after dropping the files from the page cache.
    var coldSeconds: Double?
    var coldMBps: Double?
    /// Heap bytes the open log holds per live key (its index).
    var indexBytesPerKey: Double?
}

struct DepthResult: Codable {
    var depth: Int
    var oursPreloadSeconds: Double
    /// Opening the store at this depth, until `open` returns: the store
    /// answers enqueues (with a checkpoint it loads the rest in the background).
    var oursOpenSeconds: Double
    var oursOpenColdSeconds: Double?
    /// Until the whole queue is loaded (`summary()` answers).
    var oursLoadedSeconds: Double?
    var oursLoadedColdSeconds: Double?
    /// Heap bytes per pending entry held by the open store (log index + scheduler).
    var oursHeapBytesPerEntry: Double?
    var oursDurableP50Micros: Double
    var oursDurableMeanMicros: Double
    /// With `buffered` enqueues: the CPU cost, no sync.
    var oursBufferedP50Micros: Double
    var oursBufferedMeanMicros: Double
    var sqliteFullP50Micros: Double?
    var sqliteFullMeanMicros: Double?
    var sqliteOpenSeconds: Double?
    var jsonP50Micros: Double?
    var jsonMeanMicros: Double?
    var jsonLoadSeconds: Double?
    var jsonFileBytes: Int?
}

struct ProducerPoint: Codable {
    var producers: Int
    var ours: Double
    var sqliteFull: Double
    var oursOverSQLite: Double
    var oursP50Micros: Double
    var oursP99Micros: Double
    var sqliteP50Micros: Double
}

struct Goal: Codable {
    var goal: String
    var measured: String
    var met: Bool?
    var margin: String
}
