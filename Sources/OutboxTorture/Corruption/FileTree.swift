import Foundation

/// A directory tree in memory: every regular file (path relative to the
/// tree's root → bytes) and every directory (relative path), so that a copy
/// of a real outbox root — its queue, spools and payload files — can be
/// damaged and written out again, empty directories included.
struct FileTree: Sendable, Hashable {
    var files: [String: [UInt8]] = [:]
    var directories: Set<String> = []

    /// The tree under `root` (blocking: run it through ``Blocking``).
    static func read(_ root: String) throws -> FileTree {
        var tree = FileTree()
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: root) else { return tree }
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                tree.directories.insert(relative)
            } else {
                tree.files[relative] = Array(try Data(contentsOf: URL(fileURLWithPath: root + "/" + relative)))
            }
        }
        return tree
    }

    /// Writes the tree into a fresh `root` (blocking).
    func write(to root: String) throws {
        let manager = FileManager.default
        try? manager.removeItem(atPath: root)
        try manager.createDirectory(atPath: root, withIntermediateDirectories: true)
        for directory in directories.sorted() {
            try manager.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        for (path, bytes) in files {
            let url = URL(fileURLWithPath: root + "/" + path)
            try manager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
    }

    /// The part under `prefix` (a directory), with paths relative to it.
    func subtree(_ prefix: String) -> FileTree {
        let lead = prefix + "/"
        var tree = FileTree()
        for (path, bytes) in files where path.hasPrefix(lead) { tree.files[String(path.dropFirst(lead.count))] = bytes }
        for directory in directories where directory.hasPrefix(lead) { tree.directories.insert(String(directory.dropFirst(lead.count))) }
        return tree
    }

    /// Puts `tree` under `prefix` (replacing what was there), the directory included.
    mutating func graft(_ tree: FileTree, at prefix: String) {
        prune(prefix)
        directories.insert(prefix)
        for (path, bytes) in tree.files { files[prefix + "/" + path] = bytes }
        for directory in tree.directories { directories.insert(prefix + "/" + directory) }
    }

    /// Removes `path`, and everything under it if it is a directory.
    mutating func prune(_ path: String) {
        let lead = path + "/"
        files = files.filter { $0.key != path && !$0.key.hasPrefix(lead) }
        directories = directories.filter { $0 != path && !$0.hasPrefix(lead) }
    }

    /// The names directly inside the directory `path`.
    func names(in path: String) -> [String] {
        let lead = path + "/"
        let all = files.keys.map { $0 } + directories.map { $0 }
        return Set(all.compactMap { item -> String? in
            guard item.hasPrefix(lead) else { return nil }
            let rest = item.dropFirst(lead.count)
            return rest.contains("/") ? nil : String(rest)
        }).sorted()
    }
}
