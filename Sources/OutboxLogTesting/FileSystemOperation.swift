/// One of the methods of the `FileSystem` protocol, as named in fault rules
/// and call counters.
public enum FileSystemOperation: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case openFile
    case close
    case read
    case write
    case size
    case truncate
    case synchronize
    case synchronizeDirectory
    case rename
    case removeFile
    case createDirectory
    case removeDirectory
    case contentsOfDirectory
    case itemKind
    case lockExclusively

    public var description: String { rawValue }
}
