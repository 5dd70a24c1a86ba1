import ArgumentParser
import Foundation
import OutboxLog

extension Durability: ExpressibleByArgument {}

/// `outbox log append DIR --count N --size BYTES --durability LEVEL [--segment-size BYTES] [--batch N]`
struct LogAppend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Append records with deterministic payloads, printing each acknowledged sequence number.",
        discussion: """
            Record i (from 0) has the key <key-prefix><i> and a payload of --size bytes: \
            the text "<key>." repeated and cut to that length. Each sequence number is \
            printed on its own line as soon as its append has returned, that is once the \
            record reached the --durability level. The log is closed (and synced) at the end. \
            --segment-size makes small logs roll into many segments (for tests of your own); \
            --batch writes the records in atomic batches of that many; --expires-at-ms gives \
            every record that expiry ('outbox log remove-expired' removes segments once all \
            of theirs have passed).
            """
    )

    @OptionGroup var options: LogDirectoryOptions

    @Option(help: "How many records to append (1...\(maximumCount)).")
    var count: Int

    @Option(help: "The payload size of each record, in bytes.")
    var size: Int

    @Option(help: "How far each append travels before it returns: buffered, written or durable.")
    var durability: Durability

    @Option(help: "The prefix of each record's key; the record's index follows it.")
    var keyPrefix = "record-"

    @Flag(help: "Create the log directory if it does not exist.")
    var create = false

    @Option(help: "Start a new segment once one reaches this many bytes (4096 to 2 GiB; default 8 MiB).")
    var segmentSize: Int?

    @Option(help: "Give every record this expiry, in milliseconds since 1970 (for retention).")
    var expiresAtMs: Int64?

    @Option(help: "Append the records in atomic batches of this many (1...\(OptionRange.maximumCount), its payloads at most 1 GiB; the last batch may be smaller).")
    var batch = 1

    /// The most records one run appends.
    static let maximumCount = 1_000_000_000

    func validate() throws {
        try OptionRange.require(count, in: 1...Self.maximumCount, "--count")
        guard size >= 0 else { throw ValidationError("--size must not be negative, not \(size)") }
        try OptionRange.require(batch, in: 1...OptionRange.maximumCount, "--batch")
        try OptionRange.require(segmentSize, in: 4096...(2 << 30), "--segment-size")
        let longestKey = Self.key(prefix: keyPrefix, index: count - 1)
        guard longestKey.utf8.count <= LogKey.maximumLength else {
            throw ValidationError("keys would be longer than \(LogKey.maximumLength) bytes: shorten --key-prefix")
        }
        let maximum = Self.maximumPayloadSize(longestKey: longestKey, expires: expiresAtMs != nil)
        guard size <= maximum else {
            throw ValidationError(
                "--size \(size) is too large: a record holds at most \(maximum) payload bytes with these keys "
                    + "(maximum record size \(OutboxLog.Configuration().maximumRecordSize) minus frame header and key)")
        }
        try OptionRange.requireInMemory(count: min(batch, count), size: size, "a batch's payloads (--batch × --size)")
    }

    func run() async throws {
        do {
            // The date that is stored as exactly this millisecond.
            let expiresAt = expiresAtMs.map(RecordExpiry.date)
            try await options.withLog(.readWrite(create: create), segmentSize: segmentSize) { log in
                for first in stride(from: 0, to: count, by: batch) {
                    let indices = first..<min(first + batch, count)
                    let writes = indices.map { index in
                        let key = Self.key(prefix: keyPrefix, index: index)
                        return LogWrite.value(LogKey(key), Self.payload(key: key, size: size), expiresAt: expiresAt)
                    }
                    // A batch's records are numbered consecutively, ending at `last`.
                    let last = try await log.append(writes, durability: durability)
                    for sequence in (last - UInt64(writes.count) + 1)...last { StandardStreams.writeLine(String(sequence)) }
                }
            }
        } catch {
            throw create ? error : Self.suggestingCreate(error)
        }
    }

    /// Adds a hint to a "not found" failure.
    private static func suggestingCreate(_ failure: CommandFailure) -> CommandFailure {
        guard failure.openingError?.code == .notFound else { return failure }
        return CommandFailure(
            failure.message + "; pass --create to start a new log", exitCode: failure.exitCode, openingError: failure.openingError)
    }

    /// The key of record `index`.
    static func key(prefix: String, index: Int) -> String { "\(prefix)\(index)" }

    /// The payload of the record with `key`: `"<key>."` repeated, cut to `size` bytes.
    static func payload(key: String, size: Int) -> [UInt8] {
        let unit = Array((key + ".").utf8)
        return (0..<size).map { unit[$0 % unit.count] }
    }

    /// The largest payload the engine's default configuration accepts with a key of this length.
    static func maximumPayloadSize(longestKey: String, expires: Bool = false) -> Int {
        let overhead = LogWrite.value(LogKey(longestKey), [], expiresAt: expires ? Date(timeIntervalSince1970: 0) : nil).frameSize
        return OutboxLog.Configuration().maximumRecordSize - overhead
    }
}
