import SystemPackage

/// An error thrown by ``OutboxLog``.
///
/// Every error names what went wrong (``code``), says it in a sentence
/// (``message``), and where it can, says *where*: the ``file`` and byte
/// ``offset`` of the damage, and the ``errno`` of the failed system call.
///
/// ```swift
/// do {
///     let log = try await OutboxLog.open(at: directory)
/// } catch let error where error.code == .corruption {
///     print(error)   // "corruption: segment 00000000000000000001.seg at offset 4096: CRC mismatch ..."
/// }
/// ```
public struct OutboxLogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A category of failure. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable, Sendable {
            case io, corruption, unsupportedFormat, locked, poisoned, closed, recordTooLarge
            case invalidArgument, notFound, compactionInProgress, backPressure
        }
        fileprivate var value: Value

        /// A system call failed; ``OutboxLogError/errno`` says why.
        public static let io = Code(value: .io)
        /// Bytes on disk fail their checksum or are inconsistent; the error
        /// names the file and offset. Open with ``OutboxLog/Configuration/RecoveryMode/salvage``
        /// to keep every intact record.
        public static let corruption = Code(value: .corruption)
        /// A segment or file was written by a newer, unknown format version.
        /// Nothing was modified.
        public static let unsupportedFormat = Code(value: .unsupportedFormat)
        /// Another ``OutboxLog``, in this process or another, has the directory open.
        public static let locked = Code(value: .locked)
        /// An earlier write or sync failed, so what is on disk is unknown: the
        /// log refuses every operation until it is closed and reopened.
        public static let poisoned = Code(value: .poisoned)
        /// The log was closed.
        public static let closed = Code(value: .closed)
        /// A record exceeds ``OutboxLog/Configuration/maximumRecordSize``; nothing was written.
        public static let recordTooLarge = Code(value: .recordTooLarge)
        /// An argument or configuration value is out of range; nothing was written.
        public static let invalidArgument = Code(value: .invalidArgument)
        /// The directory does not exist (and `createIfMissing` was off).
        public static let notFound = Code(value: .notFound)
        /// A compaction is already running.
        public static let compactionInProgress = Code(value: .compactionInProgress)
        /// ``OutboxLog/submit(_:)`` was refused, writing nothing, because
        /// ``OutboxLog/Configuration/maximumPendingBytes`` of appended records
        /// (with this batch) would be waiting to be written. Await
        /// ``OutboxLog/waitForRoom(bytes:)`` and submit again.
        public static let backPressure = Code(value: .backPressure)

        public var description: String {
            switch value {
            case .io: "I/O error"
            case .corruption: "corruption"
            case .unsupportedFormat: "unsupported format"
            case .locked: "locked"
            case .poisoned: "poisoned"
            case .closed: "closed"
            case .recordTooLarge: "record too large"
            case .invalidArgument: "invalid argument"
            case .notFound: "not found"
            case .compactionInProgress: "compaction in progress"
            case .backPressure: "back-pressure"
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence describing the failure.
    public var message: String
    /// The file involved, if any.
    public var file: FilePath?
    /// The byte offset in ``file`` where the problem is, if known.
    public var offset: Int64?
    /// The `errno` of the failed system call, if one failed.
    public var errno: Errno?
    /// What is wrong with the bytes, for ``Code/corruption`` found in a
    /// segment: the value ``message`` says in words.
    public var damage: LogDamage?

    public init(
        _ code: Code, _ message: String, file: FilePath? = nil, offset: Int64? = nil, errno: Errno? = nil,
        damage: LogDamage? = nil
    ) {
        self.code = code
        self.message = message
        self.file = file
        self.offset = offset
        self.errno = errno
        self.damage = damage
    }

    public var description: String {
        var text = "\(code): "
        if let file { text += file.string + (offset.map { " at offset \($0)" } ?? "") + ": " }
        text += message
        if let errno { text += " (\(errno))" }
        return text
    }

    // MARK: Constructors used across the engine

    static func io(_ what: String, _ errno: Errno, file: FilePath? = nil, offset: Int64? = nil) -> Self {
        OutboxLogError(.io, what, file: file, offset: offset, errno: errno)
    }

    static func corruption(_ what: String, file: FilePath, offset: Int64? = nil, damage: LogDamage? = nil) -> Self {
        OutboxLogError(.corruption, what, file: file, offset: offset, damage: damage)
    }

    static func closed() -> Self { OutboxLogError(.closed, "the log is closed") }

    static func poisoned(by cause: OutboxLogError) -> Self {
        if cause.code == .poisoned { return cause }
        var error = cause
        error.code = .poisoned
        error.message = "an earlier write or sync failed, the log must be reopened: \(cause.message)"
        return error
    }
}
