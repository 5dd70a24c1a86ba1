import OutboxLog

/// An error thrown by an `OutboxStore`. Every one leaves the store as it
/// was: nothing is written for a rejected call.
public struct OutboxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A category of failure. New codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The partition is at its entry-count or byte limit.
        public static let full = Code("full")
        /// The move between statuses is not allowed.
        public static let invalidTransition = Code("invalid transition")
        /// No entry with this id.
        public static let notFound = Code("not found")
        /// A dependency names an entry this partition does not know.
        public static let unknownDependency = Code("unknown dependency")
        /// A request field (or a configuration value) is out of range; see ``OutboxLimits``.
        public static let invalidArgument = Code("invalid argument")
        /// The entry's record would exceed the log's record limit
        /// (`OutboxStoreConfiguration.log.maximumRecordSize`); the message
        /// gives the limit and the size. Nothing was written.
        public static let tooLarge = Code("too large")
        /// The encryption key does not open this store's data (nothing was changed).
        public static let wrongKey = Code("wrong key")
        /// The store's data is encrypted and no key was given.
        public static let keyRequired = Code("key required")
        /// The underlying log failed; see ``OutboxError/storage``.
        public static let storage = Code("storage")
        /// A stored entry could not be decoded.
        public static let corruptEntry = Code("corrupt entry")
        /// The store is closed (or broken by an earlier storage failure).
        public static let closed = Code("closed")
        /// The partition is open elsewhere and cannot be purged.
        public static let busy = Code("busy")
        /// An entry's payload file (a body above
        /// `OutboxStoreConfiguration.largePayloadThreshold`, kept beside the
        /// log) is missing, cut short or damaged; see
        /// ``OutboxError/payloadFile``. Such an entry is quarantined, never
        /// sent with another body.
        public static let damagedPayload = Code("damaged payload")

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    /// The entry concerned, if any.
    public var entry: OutboxEntry.ID?
    /// The log's error, for ``Code/storage``.
    public var storage: OutboxLogError?
    /// What is wrong with the entry's payload file, for ``Code/damagedPayload``.
    public var payloadFile: OutboxPayloadFileFailure?

    public init(
        _ code: Code, _ message: String, entry: OutboxEntry.ID? = nil, storage: OutboxLogError? = nil,
        payloadFile: OutboxPayloadFileFailure? = nil
    ) {
        self.code = code
        self.message = message
        self.entry = entry
        self.storage = storage
        self.payloadFile = payloadFile
    }

    public var description: String {
        "\(code): " + (entry.map { "entry \($0): " } ?? "") + message + (storage.map { " (\($0))" } ?? "")
            + (payloadFile.map { " (\($0))" } ?? "")
    }

    /// This error, naming `id` as its entry unless it already names one.
    package func about(_ id: OutboxEntry.ID) -> OutboxError {
        var error = self
        if error.entry == nil { error.entry = id }
        return error
    }

    package static func storage(_ error: OutboxLogError) -> OutboxError {
        OutboxError(.storage, "the outbox log failed", storage: error)
    }
}
