import SystemPackage

extension FilePath {
    /// This path after `source` was renamed to `destination`: the same file
    /// if this path is `source` or lies below it (a renamed directory), else
    /// `nil`. The file systems keep each open descriptor's path current with
    /// it, as `/proc/self/fd` does, so a fault rule aimed at a file's final
    /// name also reaches the descriptor that wrote it under a temporary name.
    func renamed(from source: FilePath, to destination: FilePath) -> FilePath? {
        let path = lexicallyNormalized()
        let source = source.lexicallyNormalized()
        if path == source { return destination.lexicallyNormalized() }
        guard path.starts(with: source) else { return nil }
        var moved = destination.lexicallyNormalized()
        moved.append(path.components.dropFirst(source.components.count))
        return moved
    }
}
