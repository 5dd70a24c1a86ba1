import OutboxLocking
import OutboxLog
import SystemPackage

/// Passes every call through to `base`, calling `hook` with the operation
/// and the paths it names (for a descriptor: none) first — to count calls,
/// hold one up, or make it fail with the errno the hook returns.
public final class HookedFileSystem: ForwardingFileSystem, Sendable {
    public let base: any FileSystem
    public let hook: @Sendable (FileSystemOperation, [FilePath]) -> Errno?
    /// Every read-ahead hint given, in order: (descriptor, offset, length).
    package let readAdvice = Locked<[(descriptor: Int32, offset: Int64, length: Int64)]>([])

    public init(base: any FileSystem, hook: @escaping @Sendable (FileSystemOperation, [FilePath]) -> Errno?) {
        self.base = base
        self.hook = hook
    }

    /// A hook that never fails a call.
    public convenience init(base: any FileSystem, observe: @escaping @Sendable (FileSystemOperation) -> Void) {
        self.init(base: base) { operation, _ in
            observe(operation)
            return nil
        }
    }

    /// Calls ``hook`` first; passes the call on unless it returns an errno.
    public func intercept<T>(
        _ operation: FileSystemOperation, paths: [FilePath], _ call: () throws(Errno) -> T
    ) throws(Errno) -> T {
        if let error = hook(operation, paths) { throw error }
        return try call()
    }

    /// Records the hint in ``readAdvice``, then passes it on (never hooked).
    public func adviseWillRead(_ descriptor: FileDescriptor, offset: Int64, length: Int64) {
        readAdvice.withLock { $0.append((descriptor.rawValue, offset, length)) }
        base.adviseWillRead(descriptor, offset: offset, length: length)
    }
}
