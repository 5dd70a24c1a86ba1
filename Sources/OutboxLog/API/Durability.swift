/// How far an append travels before it returns.
///
/// Chosen per append. Each level survives strictly more than the one before:
///
/// | Level | Returns after | Survives app kill | Survives OS crash / power loss |
/// |---|---|---|---|
/// | ``buffered`` | the record is in the log's memory | no | no |
/// | ``written`` | `write(2)` handed it to the kernel | yes | no |
/// | ``durable`` | `fdatasync(2)` / `F_FULLFSYNC` flushed it | yes | yes |
///
/// A `durable` append also makes every record appended before it durable,
/// and a `written` append writes every earlier `buffered` one: the log is a
/// prefix, never a set with holes. See Docs/DURABILITY.md.
public enum Durability: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Kept in memory until the next write or sync; lost if the process dies.
    case buffered
    /// Written to the operating system before returning; survives the
    /// process being killed, not a kernel crash or power loss.
    case written
    /// Flushed to stable storage before returning (group-committed with
    /// concurrent appends); survives a kernel crash and power loss.
    case durable

    public var description: String { rawValue }
}
