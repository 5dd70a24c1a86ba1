import OutboxLog

/// The consumers' committed positions, in a log of their own beside the
/// elements' (so retention of elements never touches them): one value per
/// consumer, keyed by its name's UTF-8 bytes, superseded at each commit and
/// compacted away as the log's dead bytes grow.
///
/// A value is 9 bytes: a version (1), then the position, little-endian.
/// Position 0 means "nothing consumed yet" (no element has sequence 0).
package struct ConsumerOffsets: Sendable {
    let log: OutboxLog

    /// The longest consumer name, in UTF-8 bytes.
    static let maximumNameBytes = 255

    static func key(_ name: String) throws(QueueError) -> LogKey {
        let bytes = Array(name.utf8)
        guard (1...maximumNameBytes).contains(bytes.count) else {
            throw QueueError(.invalidArgument, "a consumer name is 1 to \(maximumNameBytes) UTF-8 bytes, not \(bytes.count)")
        }
        return LogKey(bytes)
    }

    package static func encode(_ position: UInt64) -> [UInt8] {
        [1] + (0..<8).map { UInt8(truncatingIfNeeded: position >> (8 * $0)) }
    }

    /// A commit record's position, or `nil` for bytes that are not one.
    package static func position(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count == 9, bytes[0] == 1 else { return nil }
        return bytes[1...].reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func decode(_ bytes: [UInt8], consumer key: LogKey, in log: OutboxLog) throws(QueueError) -> UInt64 {
        guard let position = position(bytes) else {
            throw QueueError(
                .damaged,
                "consumer \(key)'s committed position in \(log.directory) is \(bytes.count) bytes"
                    + (bytes.first.map { " of version \($0)" } ?? "") + ", not 9 of version 1")
        }
        return position
    }

    /// The consumer's committed position: `nil` if it was never created.
    func committed(_ key: LogKey) async throws(QueueError) -> UInt64? {
        let entry: LogEntry?
        do { entry = try await log.get(key) } catch { throw QueueError.from(error, "cannot read consumer \(key)'s position") }
        guard let entry else { return nil }
        return try Self.decode(entry.value, consumer: key, in: log)
    }

    /// Records the consumer's new position, in room reserved first (a
    /// commit is never refused for back-pressure); await the ticket for its
    /// durability.
    func record(_ key: LogKey, _ position: UInt64) async throws(QueueError) -> LogTicket {
        try Self.commit(.value(key, Self.encode(position)), in: try await room(), consumer: key)
    }

    /// Room for one commit or removal record (the two are the same size or
    /// smaller), reserved so that the record can then be committed under a
    /// consumer's own lock, in the order of that lock.
    func room() async throws(QueueError) -> LogReservation {
        do { return try await log.reserve(bytes: LogWrite.value(LogKey([0]), Self.encode(0)).frameSize + ConsumerOffsets.maximumNameBytes) } catch {
            throw QueueError.from(error, "cannot reserve room for a consumer's record")
        }
    }

    static func commit(_ write: LogWrite, in room: LogReservation, consumer key: LogKey) throws(QueueError) -> LogTicket {
        do { return try room.commit([write]) } catch { throw QueueError.from(error, "cannot record consumer \(key)") }
    }
}
