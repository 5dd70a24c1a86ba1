import Foundation

// Reading: by key from the index, and in sequence order page by page.
extension OutboxLog {
    /// The live value and annotation of `key`, verified against their CRCs,
    /// or `nil` if the key has no value. Reads the disk (never the cooperative
    /// pool); a record still buffered in memory is written out first.
    ///
    /// - Complexity: O(1) on average to find it, then one read of the value
    ///   (and one of the annotation) and their CRCs: O(*b*) in their bytes.
    public func get(_ key: LogKey) async throws(OutboxLogError) -> LogEntry? { try await core.get(key) }

    /// The live value and annotation of each of `keys` (`nil` where a key
    /// has no value), in the order given: as ``get(_:)-(LogKey)`` for each,
    /// but read in one job on a reader thread.
    ///
    /// - Complexity: O(*k* + *b*) for *k* keys whose records hold *b* bytes.
    public func get(_ keys: [LogKey]) async throws(OutboxLogError) -> [LogEntry?] { try await core.get(keys) }

    /// The live value of each key, verified, or `nil` — like ``get(_:)-([LogKey])``
    /// without the annotations: each entry's ``LogEntry/annotation`` is
    /// `nil`, and an annotation not yet written (appended at `buffered`,
    /// say) is not waited for. For a reader that needs only the values
    /// while it annotates the same keys: reading them does not make those
    /// annotations be written first.
    ///
    /// - Complexity: O(*k*) lookups in memory, then one read of each value.
    public func values(_ keys: [LogKey]) async throws(OutboxLogError) -> [LogEntry?] {
        try await core.get(keys, annotations: false)
    }

    /// Every live key that starts with `prefix`, in no particular order.
    /// Answers from memory.
    ///
    /// - Complexity: O(*n*) in live keys.
    public func keys(withPrefix prefix: [UInt8]) -> [LogKey] { core.keys(withPrefix: prefix) }

    /// Whether `key` has a value. Answers from memory.
    ///
    /// - Complexity: O(1) on average.
    public func contains(_ key: LogKey) -> Bool { core.contains(key) }

    /// Every live key, in no particular order. Answers from memory.
    ///
    /// - Complexity: O(*n*) in live keys.
    public var keys: [LogKey] { core.keys() }

    /// Live entries in sequence order whose value's sequence number is
    /// greater than `after`, at most `limit`: one page of a scan.
    ///
    /// - Throws: `.invalidArgument` if `limit` is less than 1.
    ///
    /// - Complexity: O(*b*) in the bytes of the segments read: from the
    ///   segment holding `after` on, each record verified, until `limit`
    ///   live entries are found. A page that continues one of the last few
    ///   (`after` = its last entry's sequence) resumes where that one
    ///   stopped instead of verifying the segment again — also at the end
    ///   of the log, where it verifies only what was appended since — and
    ///   verifies again only the records it returns.
    public func entries(after sequence: UInt64 = 0, limit: Int = 1024) async throws(OutboxLogError) -> [LogEntry] {
        guard limit >= 1 else { throw OutboxLogError(.invalidArgument, "limit must be at least 1, not \(limit)") }
        return try await core.entries(after: sequence, limit: limit).entries
    }

    /// All live entries in sequence order, read page by page. The stream
    /// ends with `.invalidArgument` if `pageSize` is less than 1.
    public func allEntries(pageSize: Int = 1024) -> AsyncThrowingStream<LogEntry, any Error> {
        let core = self.core
        return AsyncThrowingStream { continuation in
            guard pageSize >= 1 else {
                continuation.finish(throwing: OutboxLogError(.invalidArgument, "pageSize must be at least 1, not \(pageSize)"))
                return
            }
            let task = Task {
                var after: UInt64 = 0
                do {
                    while true {
                        let page = try await core.entries(after: after, limit: pageSize)
                        for entry in page.entries { continuation.yield(entry) }
                        guard let next = page.resumeAfter, !Task.isCancelled else { break }
                        after = next
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
