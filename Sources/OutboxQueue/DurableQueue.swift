import Foundation
import OutboxLocking
import OutboxLog
import SystemPackage

/// A durable queue on `OutboxLog`: producers append elements (bytes), and
/// named consumers read them in order from their own committed positions.
///
/// ```swift
/// let queue = try await DurableQueue.open(at: "/var/spool/events")
/// try await queue.append(Array("hello".utf8), durability: .durable)
/// let consumer = try await queue.consumer(named: "shipper")
/// for try await element in consumer.tail() {
///     try await ship(element.bytes)
///     try await consumer.commit(through: element.position)
/// }
/// ```
///
/// - **At least once.** A consumer resumes after its last commit: a process
///   killed at any point redelivers what was read but not committed, and
///   never skips an element nor goes back before the commit.
/// - **The durability you ask for.** An append returns once its elements
///   reached `buffered`, `written` or `durable` (`Durability`), concurrent
///   durable appends sharing one sync. A consumer may read an element once
///   it is written (in the page cache), before a durable append of it
///   returns, as a database reads its own committed writes.
/// - **One process.** The queue's directory is locked while it is open.
///
/// The directory holds two logs: `elements/`, one record per element, and
/// `consumers/`, one small record per commit.
public final class DurableQueue: Sendable {
    /// How the queue's two logs are opened.
    public struct Configuration: Sendable {
        /// The elements' log.
        public var elements = OutboxLog.Configuration()
        /// The consumers' log: small records, superseded at every commit
        /// and compacted as they pile up. 1 MiB segments by default.
        public var consumers = OutboxLog.Configuration()
        /// What ``DurableQueue/trim(now:)`` removes beyond what every
        /// consumer has committed: nothing, by default.
        public var retention = QueueRetention()
        /// The time each element is stamped with as it is appended
        /// (``QueueElement/appendedAt``), and that the age limit counts back
        /// from: the system's by default.
        public var clock: @Sendable () -> Date = { Date() }

        public init() {
            consumers.segmentSize = 1 << 20
        }
    }

    /// Where new consumers start.
    public enum Start: Sendable, Hashable {
        /// At the oldest element the queue holds.
        case oldest
        /// After the newest element appended so far.
        case end
    }

    let logs: QueueLogs
    var elements: OutboxLog { logs.elements }
    var offsets: ConsumerOffsets { logs.offsets }
    /// The key of the next element: a counter that starts, at each open,
    /// at the log's next sequence number. Every element takes a sequence
    /// number, so keys of earlier opens are all below it.
    private let nextKey: Locked<UInt64>
    /// Each consumer's creation, done or under way, by its name's bytes
    /// (the key it is stored under: two strings Swift calls equal may
    /// differ in their bytes, and they are two consumers on disk).
    let consumers = Locked<[LogKey: Task<QueueConsumer, any Error>]>([:])
    let closed = Locked(false)
    let retention: QueueRetention
    let clock: @Sendable () -> Date
    let maintenance = MaintenanceGate()

    private init(elements: OutboxLog, offsets: OutboxLog, configuration: Configuration) {
        logs = QueueLogs(elements: elements, offsets: ConsumerOffsets(log: offsets), signal: AppendSignal())
        nextKey = Locked(elements.statistics.nextSequence)
        retention = configuration.retention
        clock = configuration.clock
    }

    /// Opens the queue in `directory`, creating it if it does not exist.
    ///
    /// - Throws: ``QueueError`` with code `log` for what the logs refuse
    ///   (`locked` if the queue is open elsewhere; damage; I/O).
    public static func open(
        at directory: FilePath, configuration: Configuration = Configuration()
    ) async throws(QueueError) -> DurableQueue {
        try configuration.retention.validate()
        let elements: OutboxLog
        do { elements = try await OutboxLog.open(at: directory.appending("elements"), configuration: configuration.elements) } catch {
            throw QueueError.from(error, "cannot open the queue's elements in \(directory)")
        }
        // Its keys are listed at the open and by removeConsumed(): with the
        // index loaded, never by a wait on the cooperative pool.
        var consumersConfiguration = configuration.consumers
        consumersConfiguration.opensBeforeIndexIsLoaded = false
        let offsets: OutboxLog
        do { offsets = try await OutboxLog.open(at: directory.appending("consumers"), configuration: consumersConfiguration) } catch {
            try? await elements.close()
            throw QueueError.from(error, "cannot open the queue's consumers in \(directory)")
        }
        let queue = DurableQueue(elements: elements, offsets: offsets, configuration: configuration)
        do { try await queue.clampCommitsToElements() } catch {
            try? await queue.close()
            throw error
        }
        return queue
    }

    /// Opens the queue in the directory at `path`; see
    /// ``open(at:configuration:)-(FilePath,_)``.
    public static func open(
        at path: String, configuration: Configuration = Configuration()
    ) async throws(QueueError) -> DurableQueue {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw QueueError(.invalidArgument, "a queue's directory is a path, not empty and without NUL bytes")
        }
        return try await open(at: FilePath(path), configuration: configuration)
    }

    /// Appends one element and returns its position once it reached
    /// `durability`.
    ///
    /// - Throws: `invalidArgument` for an element larger than the log's
    ///   largest record (nothing is appended); `closed`; `log`.
    @discardableResult
    public func append(_ element: [UInt8], durability: Durability = .written) async throws(QueueError) -> QueuePosition {
        try await append(contentsOf: [element], durability: durability)
    }

    /// Appends `elements` as one atomic batch — after a crash all of them are
    /// there or none — and returns the last one's position once the batch
    /// reached `durability`; the others are before it, in order.
    ///
    /// - Throws: `invalidArgument` for an empty batch or one the log refuses
    ///   (too large), appending nothing; `closed`; `log`.
    @discardableResult
    public func append(contentsOf elements: [[UInt8]], durability: Durability = .written) async throws(QueueError) -> QueuePosition {
        guard !elements.isEmpty else { throw QueueError(.invalidArgument, "an append needs at least one element") }
        let ticket = try await submit(elements)
        do { try await ticket.wait(for: durability) } catch { throw QueueError.from(error, "append failed") }
        logs.signal.appended()
        return QueuePosition(rawValue: ticket.sequence)
    }

    /// Commits the batch under the key counter's lock, so keys follow the
    /// log's order, in room reserved first (waiting outside the lock when
    /// the log pushes back: never refused, never spinning).
    private func submit(_ payloads: [[UInt8]]) async throws(QueueError) -> LogTicket {
        // Every key is 8 bytes: the frames' size does not depend on which.
        // Every element is stamped with its append time: what age retention removes by.
        let now = clock()
        guard let milliseconds = ElementRecord.milliseconds(now) else {
            throw QueueError(.invalidArgument, "the queue's clock says \(now), a time an element cannot be stamped with")
        }
        let header = ElementRecord.header(milliseconds)
        let bytes = payloads.reduce(0) { $0 + LogWrite.value(Self.key(0), parts: [header[...], $1[...]]).frameSize }
        do {
            let room: LogReservation
            if let now = elements.reserveIfAvailable(bytes: bytes) { room = now } else { room = try await elements.reserve(bytes: bytes) }
            return try nextKey.withLock { next throws(OutboxLogError) -> LogTicket in
                let writes = payloads.enumerated().map { offset, payload in LogWrite.value(Self.key(next + UInt64(offset)), parts: [header[...], payload[...]]) }
                let ticket = try room.commit(writes)
                next += UInt64(payloads.count)
                return ticket
            }
        } catch {
            throw QueueError.from(error, "append refused")
        }
    }

    static func key(_ counter: UInt64) -> LogKey {
        LogKey((0..<8).reversed().map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) })
    }

    /// Closes the queue: tails end, later calls throw `closed`, and both
    /// logs are synced and closed.
    public func close() async throws(QueueError) {
        closed.withLock { $0 = true }
        logs.signal.close()
        var failure: QueueError?
        do { try await elements.close() } catch { failure = QueueError.from(error, "closing the elements failed") }
        do { try await offsets.log.close() } catch { failure = failure ?? QueueError.from(error, "closing the consumers failed") }
        if let failure, failure.code != .closed { throw failure }
    }
}
