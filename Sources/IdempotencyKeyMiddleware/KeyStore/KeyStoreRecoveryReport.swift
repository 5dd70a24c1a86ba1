import OutboxLog

/// What ``LogIdempotencyKeyStore/open(at:configuration:now:)-(FilePath,_,_)``
/// found: the log's own report, and the keys it holds.
public struct KeyStoreRecoveryReport: Sendable, Hashable {
    /// The log's recovery: a torn tail cut, an index checkpoint used (so the
    /// open read only what was written after it), an interrupted removal
    /// finished.
    public var log: RecoveryReport
    /// Completed keys held (until retention removes their segment).
    public var completedKeys = 0
    /// Keys claimed by a server that stopped before they completed, and keys
    /// whose response was not recorded: answered outcome-unknown.
    public var unsettledKeys = 0
}
