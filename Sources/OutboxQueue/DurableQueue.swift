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

    let elements: OutboxLog
    let offsets: ConsumerOffsets
    let signal = AppendSignal()
    /// The key of the next element: a counter that starts, at each open,
    /// at the log's next sequence number. Every element takes a sequence
    /// number, so keys of earlier opens are all below it.
    private let nextKey: Locked<UInt64>
    /// Each consumer's creation, done or under way.
    private let consumers = Locked<[String: Task<QueueConsumer, any Error>]>([:])

    private init(elements: OutboxLog, offsets: OutboxLog) {
        self.elements = elements
        self.offsets = ConsumerOffsets(log: offsets)
        nextKey = Locked(elements.statistics.nextSequence)
    }

    /// Opens the queue in `directory`, creating it if it does not exist.
    ///
    /// - Throws: ``QueueError`` with code `log` for what the logs refuse
    ///   (`locked` if the queue is open elsewhere; damage; I/O).
    public static func open(
        at directory: FilePath, configuration: Configuration = Configuration()
    ) async throws(QueueError) -> DurableQueue {
        let elements: OutboxLog
        do { elements = try await OutboxLog.open(at: directory.appending("elements"), configuration: configuration.elements) } catch {
            throw QueueError.from(error, "cannot open the queue's elements in \(directory)")
        }
        let offsets: OutboxLog
        do { offsets = try await OutboxLog.open(at: directory.appending("consumers"), configuration: configuration.consumers) } catch {
            try? await elements.close()
            throw QueueError.from(error, "cannot open the queue's consumers in \(directory)")
        }
        let queue = DurableQueue(elements: elements, offsets: offsets)
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

    /// A commit is made at least as durable as its elements, but a commit
    /// left `buffered` can still reach the disk with a later sync of the
    /// consumers' log while its elements did not: after a power loss it
    /// would point past the elements' end, and the next appends — at
    /// positions below it — would be skipped. Such commits are brought back
    /// to the end, durably, before anything is appended.
    private func clampCommitsToElements() async throws(QueueError) {
        let end = max(elements.statistics.nextSequence, 1) - 1
        for key in offsets.log.keys {
            let name = String(decoding: key.bytes, as: UTF8.self)
            guard let committed = try? await offsets.committed(name), committed > end else { continue }
            let ticket = try offsets.submit(name, end)
            do { try await ticket.wait(for: .durable) } catch { throw QueueError.from(error, "cannot bring consumer \(name) back to the end") }
        }
    }

    /// The position of the newest element appended, or a later one; `nil`
    /// before the first.
    public var newestPosition: QueuePosition? {
        let next = elements.statistics.nextSequence
        return next > 1 ? QueuePosition(rawValue: next - 1) : nil
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
        signal.appended()
        return QueuePosition(rawValue: ticket.sequence)
    }

    /// Submits under the key counter's lock, so keys follow the log's order;
    /// waits for room outside it when the log pushes back.
    private func submit(_ payloads: [[UInt8]]) async throws(QueueError) -> LogTicket {
        let bytes = payloads.reduce(0) { $0 + $1.count }
        while true {
            let outcome = nextKey.withLock { next -> Result<LogTicket, OutboxLogError>? in
                let writes = payloads.enumerated().map { offset, payload in
                    LogWrite.value(Self.key(next + UInt64(offset)), payload)
                }
                do throws(OutboxLogError) {
                    let ticket = try self.elements.submit(writes)
                    next += UInt64(payloads.count)
                    return .success(ticket)
                } catch {
                    return error.code == .backPressure ? nil : .failure(error)
                }
            }
            switch outcome {
            case .success(let ticket): return ticket
            case .failure(let error): throw QueueError.from(error, "append refused")
            case nil:
                do { try await elements.waitForRoom(bytes: bytes) } catch { throw QueueError.from(error, "append failed") }
            }
        }
    }

    static func key(_ counter: UInt64) -> LogKey {
        LogKey((0..<8).reversed().map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) })
    }

    /// The consumer named `name`, created at `start` if it never was (its
    /// start is committed durably before this returns, so it survives a
    /// restart). One object per name: a second call returns the same one.
    ///
    /// - Throws: `invalidArgument` for a name that is empty or longer than
    ///   255 UTF-8 bytes; `damaged` if its committed position does not read
    ///   back (other consumers are unaffected); `closed`; `log`.
    public func consumer(named name: String, startingAt start: Start = .oldest) async throws(QueueError) -> QueueConsumer {
        // One creation per name: a second caller awaits the first's, so two
        // first-time calls cannot each record a start.
        let creation = consumers.withLock { consumers -> Task<QueueConsumer, any Error> in
            if let existing = consumers[name] { return existing }
            let made = Task { try await self.makeConsumer(named: name, startingAt: start) }
            consumers[name] = made
            return made
        }
        do {
            return try await creation.value
        } catch {
            // A failed creation (damage, a closed queue) is tried again by the next call.
            consumers.withLock { consumers in
                if consumers[name] == creation { consumers[name] = nil }
            }
            throw error as? QueueError ?? QueueError(.log, "cannot create consumer \(name): \(error)")
        }
    }

    private func makeConsumer(named name: String, startingAt start: Start) async throws(QueueError) -> QueueConsumer {
        if let stored = try await offsets.committed(name) {
            return QueueConsumer(name: name, queue: self, committed: stored)
        }
        let position = start == .oldest ? 0 : (newestPosition?.rawValue ?? 0)
        try await elementsReach(position, .durable)
        let ticket = try offsets.submit(name, position)
        do { try await ticket.wait(for: .durable) } catch { throw QueueError.from(error, "cannot create consumer \(name)") }
        return QueueConsumer(name: name, queue: self, committed: position)
    }

    /// Makes the elements through `position` reach `durability` before a
    /// commit covering them does: a commit that outlived its elements (a
    /// power loss keeping the consumers' sync and not the elements') would
    /// point past the recovered end, and the elements appended next — at
    /// positions below it — would be skipped.
    func elementsReach(_ position: UInt64, _ durability: Durability) async throws(QueueError) {
        let statistics = elements.statistics
        do {
            switch durability {
            case .durable where statistics.durableSequence < position: try await elements.sync()
            case .written where statistics.writtenSequence < position: try await elements.flush()
            default: break
            }
        } catch {
            throw QueueError.from(error, "cannot make the elements through \(position) \(durability)")
        }
    }

    /// Closes the queue: tails end, later calls throw `closed`, and both
    /// logs are synced and closed.
    public func close() async throws(QueueError) {
        signal.close()
        var failure: QueueError?
        do { try await elements.close() } catch { failure = QueueError.from(error, "closing the elements failed") }
        do { try await offsets.log.close() } catch { failure = failure ?? QueueError.from(error, "closing the consumers failed") }
        if let failure, failure.code != .closed { throw failure }
    }
}
