import OutboxLog

/// Reads back everything a recovered log holds, through both read paths,
/// and checks what no oracle needs a history for.
public enum LogContents {
    /// What reading a log found.
    public struct Reading: Sendable {
        public var state = StateModel()
        /// Problems found while reading: a key listed twice by a scan (a
        /// compaction that duplicated it), a scan and a `get` that disagree,
        /// a key the index lists that a scan does not return.
        public var problems: [String] = []
    }

    /// Scans every live entry (`allEntries`, each record CRC-verified) and
    /// reads each key again with `get`; both must agree.
    ///
    /// - Throws: whatever the log throws (a read that fails its CRC throws
    ///   `.corruption`): the caller decides whether that is a violation.
    public static func read(_ log: OutboxLog, pageSize: Int = 64) async throws -> Reading {
        var reading = Reading()
        for try await entry in log.allEntries(pageSize: pageSize) {
            let found = StateModel.Entry(value: entry.value, annotation: entry.annotation?.payload)
            if reading.state.entries.updateValue(found, forKey: entry.key) != nil {
                reading.problems.append("key \(entry.key) is returned twice by a scan")
            }
        }
        let indexed = Set(log.keys)
        for key in indexed.subtracting(reading.state.entries.keys).sorted() {
            reading.problems.append("key \(key) is live in the index but missing from a scan")
        }
        for (key, expected) in reading.state.entries.sorted(by: { $0.key < $1.key }) {
            guard indexed.contains(key) else {
                reading.problems.append("key \(key) is returned by a scan but not live in the index")
                continue
            }
            let entry = try await log.get(key)
            let got = entry.map { StateModel.Entry(value: $0.value, annotation: $0.annotation?.payload) }
            if got != expected {
                reading.problems.append(
                    "get(\(key)) returns \(PrefixOracle.describe(got)) but a scan \(PrefixOracle.describe(expected))")
            }
        }
        return reading
    }
}
