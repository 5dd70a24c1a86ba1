import Foundation
import OutboxBenchSupport
import Synchronization

/// Runs RocksDB's own benchmark tool, `db_bench`, for one round and reads
/// its report. `db_bench`'s `fillseq` writes a fixed number of keys (its
/// `--duration` applies only to the random workloads), so each round asks
/// for as many as the previous round's rate fills in the time given.
struct RocksDBBench: Sendable {
    let executable: URL
    let sync: Bool
    let threads: Int
    /// Writes per second per thread, from the last round (a first guess before any).
    private let rate = Rate()

    private final class Rate: Sendable {
        let perThread = Mutex(1_000.0)
    }

    init(executable: URL, sync: Bool, threads: Int) {
        self.executable = executable
        self.sync = sync
        self.threads = threads
    }

    /// `db_bench` on this machine's `PATH`, if installed.
    static var executable: URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("db_bench") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Its version (`db_bench --version`), for the row's name; empty if it
    /// is not installed or says nothing usable.
    static let version: String = {
        guard let executable, let output = try? launch(executable, ["--version"]) else { return "" }
        return output.split(separator: "\n").first.map { String($0.split(separator: " ").last ?? "") } ?? ""
    }()

    struct Failed: Error, CustomStringConvertible {
        var output: String
        var description: String { "db_bench failed or printed no fillseq line: \(output.suffix(2_000))" }
    }

    /// One round of about `seconds` into a fresh database at `path`.
    func run(seconds: Double, in path: String) async throws -> TimedRun {
        let perThread = max(200, Int(rate.perThread.withLock { $0 } * seconds))
        let arguments = [
            "--benchmarks=fillseq", "--num=\(perThread)", "--threads=\(threads)", "--sync=\(sync ? 1 : 0)",
            "--key_size=\(EngineContenders.keyBytes)", "--value_size=\(EngineContenders.valueBytes)",
            "--compression_type=none", "--histogram=1", "--db=\(path)",
        ]
        let output = try await onDedicatedThread { [executable] in try Self.launch(executable, arguments) }
        guard let report = RocksDBReport(output) else { throw Failed(output: output) }
        rate.perThread.withLock { $0 = max(1, Double(report.operations) / max(report.seconds, 1e-6) / Double(threads)) }
        return TimedRun(
            operations: report.operations, seconds: report.seconds, latencies: Samples(),
            reportedLatency: ReportedLatency(p50Nanoseconds: report.p50Micros * 1000, p99Nanoseconds: report.p99Micros * 1000))
    }

    /// Runs it to its end; its standard output and error together.
    private static func launch(_ executable: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read to the end before waiting: a full pipe would stall it.
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw Failed(output: text) }
        return text
    }
}

/// What `db_bench` printed for `fillseq`: the summary line
/// (`fillseq : 134.714 micros/op 7422 ops/sec 0.269 seconds 2000 operations;`)
/// and its histogram's percentiles (`Percentiles: P50: 90.53 P75: … P99: 2200.00 …`).
struct RocksDBReport {
    var operations: Int
    var seconds: Double
    var p50Micros: Double
    var p99Micros: Double

    init?(_ output: String) {
        let lines = output.split(separator: "\n")
        guard let summary = lines.first(where: { $0.hasPrefix("fillseq") }),
            let percentiles = lines.first(where: { $0.hasPrefix("Percentiles:") })
        else { return nil }
        let words = summary.split(separator: " ")
        func number(before unit: String, in words: [Substring]) -> Double? {
            guard let index = words.firstIndex(where: { $0.hasPrefix(unit) }), index > 0 else { return nil }
            return Double(words[index - 1])
        }
        func number(after label: String, in words: [Substring]) -> Double? {
            guard let index = words.firstIndex(of: Substring(label)), index + 1 < words.count else { return nil }
            return Double(words[index + 1])
        }
        let marks = percentiles.split(separator: " ")
        guard let operations = number(before: "operations", in: words), let seconds = number(before: "seconds", in: words),
            let p50 = number(after: "P50:", in: marks), let p99 = number(after: "P99:", in: marks), operations > 0, seconds > 0
        else { return nil }
        self.operations = Int(operations)
        self.seconds = seconds
        self.p50Micros = p50
        self.p99Micros = p99
    }
}
