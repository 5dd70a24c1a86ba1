import SystemPackage

/// Which paths a ``FaultRule`` applies to, or which calls
/// ``FaultInjector/callCount(of:paths:)`` counts.
///
/// Operations on a descriptor (`read`, `write`, `synchronize`, …) are matched
/// against the file's current path: the one it was opened with, or the one
/// a later rename gave it (or a directory above it). A `rename` matches if
/// either its source or its destination matches. A call whose path is
/// unknown (a descriptor that was never opened or is already closed) only
/// matches ``any``.
///
/// The predicate runs while the file system holds its lock: it must be fast
/// and must not call back into the file system.
public struct PathFilter: Sendable, CustomStringConvertible {
    private let predicate: @Sendable (FilePath) -> Bool
    private let matchesUnknownPath: Bool
    public let description: String

    /// Matches every call, including calls on unknown descriptors.
    public static let any = PathFilter(description: "any path", matchesUnknownPath: true) { _ in true }

    /// Matches paths whose string form ends with `suffix` (for example
    /// `".log"` or `"/MANIFEST"`).
    public static func suffix(_ suffix: String) -> PathFilter {
        PathFilter(description: "paths ending in \"\(suffix)\"", matchesUnknownPath: false) {
            $0.string.hasSuffix(suffix)
        }
    }

    /// Matches exactly `path` (after lexical normalization).
    public static func exactly(_ path: FilePath) -> PathFilter {
        let normal = path.lexicallyNormalized()
        return PathFilter(description: "\(normal)", matchesUnknownPath: false) {
            $0.lexicallyNormalized() == normal
        }
    }

    /// Matches `directory` itself and everything below it.
    public static func under(_ directory: FilePath) -> PathFilter {
        let normal = directory.lexicallyNormalized()
        return PathFilter(description: "paths under \(normal)", matchesUnknownPath: false) {
            $0.lexicallyNormalized().starts(with: normal)
        }
    }

    /// Matches paths for which `predicate` returns `true`.
    public static func matching(
        _ description: String = "custom predicate", _ predicate: @escaping @Sendable (FilePath) -> Bool
    ) -> PathFilter {
        PathFilter(description: description, matchesUnknownPath: false, predicate: predicate)
    }

    private init(description: String, matchesUnknownPath: Bool, predicate: @escaping @Sendable (FilePath) -> Bool) {
        self.description = description
        self.matchesUnknownPath = matchesUnknownPath
        self.predicate = predicate
    }

    /// Only ``any`` matches calls with unknown paths, so this identifies it.
    var matchesEverything: Bool { matchesUnknownPath }

    /// Whether the filter matches `path`.
    public func matches(_ path: FilePath) -> Bool { predicate(path) }

    /// Whether the filter matches a call that involves `paths` (empty when
    /// the call's path is unknown).
    func matches(anyOf paths: [FilePath]) -> Bool {
        if paths.isEmpty { return matchesUnknownPath }
        return paths.contains(where: predicate)
    }
}
