import OutboxLog
import Testing

/// The writes of the model-based tests (``ModelTests``,
/// ``IndexCheckpointModelTests``), made on the log and on the model alike:
/// keys are `k<n>`, values a pattern seeded by the operation's number.
enum ModelWrites {
    static func key(_ number: Int) -> LogKey { LogKey("k\(number)") }

    static func put(
        _ log: OutboxLog, _ model: inout LogModel, key number: Int, size: Int, seed: Int, durability: Durability
    ) async throws {
        let value = [UInt8].pattern(size, seed: seed)
        try await log.put(key(number), value, durability: durability)
        model[key(number)] = (value, nil)
    }

    /// Deletes the key from both; the log must say it had the key exactly
    /// when the model had it.
    static func delete(
        _ log: OutboxLog, _ model: inout LogModel, key number: Int, durability: Durability,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let sequence = try await log.delete(key(number), durability: durability)
        #expect((sequence != nil) == (model[key(number)] != nil), "delete(k\(number))", sourceLocation: sourceLocation)
        model[key(number)] = nil
    }

    /// One batch of puts (value `i` seeded `seed * 10 + i`).
    static func batch(
        _ log: OutboxLog, _ model: inout LogModel, keys numbers: [Int], size: Int, seed: Int, durability: Durability
    ) async throws {
        var writes: [LogWrite] = []
        for (position, number) in numbers.enumerated() {
            let value = [UInt8].pattern(size, seed: seed * 10 + position)
            writes.append(.value(key(number), value))
            model[key(number)] = (value, nil)
        }
        try await log.append(writes, durability: durability)
    }
}
