import SystemPackage

/// An open file description (there is no `dup`, so one per descriptor).
struct OpenFile: Sendable {
    let node: NodeID
    /// The path it was opened with, kept current across renames of the file
    /// or a directory above it, for fault-rule path filters and reports.
    var path: FilePath
    let writable: Bool
}

/// Everything a ``SimulatedFileSystem`` holds, as plain values, so that a
/// snapshot is a copy of this struct (copy-on-write makes it cheap).
struct SimulatedState: Sendable {
    static let rootID: NodeID = 0

    /// Largest file size (EFBIG beyond): files live in memory, and a runaway
    /// offset should fail a test rather than exhaust the machine.
    static let maximumFileSize: Int64 = 1 << 30

    var files: [NodeID: FileNode] = [:]
    var directories: [NodeID: DirectoryNode] = [rootID: DirectoryNode()]
    var nextNodeID: NodeID = 1

    var descriptors: [CInt: OpenFile] = [:]
    /// Descriptor numbers are never reused, and start far above the real
    /// ones a process has: a descriptor kept across a simulated crash, or
    /// passed by mistake to the real file system, fails with EBADF instead
    /// of silently reaching another file.
    var nextDescriptor: CInt = 10_000
    /// flock holders: node → the descriptor (open file description) holding
    /// the exclusive lock.
    var lockHolders: [NodeID: CInt] = [:]

    // MARK: Paths

    /// The names along an absolute path. Relative paths are rejected
    /// (EINVAL): the simulation has no working directory, and a relative
    /// path reaching the engine is a bug worth failing loudly on.
    static func names(in path: FilePath) throws(Errno) -> [String] {
        guard path.isAbsolute else { throw .invalidArgument }
        var names: [String] = []
        for component in path.lexicallyNormalized().components {
            switch component.kind {
            case .regular: names.append(component.string)
            case .currentDirectory: continue
            case .parentDirectory: throw .invalidArgument  // "/.." — nothing above the root
            }
        }
        return names
    }

    /// The directory that contains the last component of `names`, which must
    /// not be empty. Throws ENOENT if an ancestor is missing, ENOTDIR if an
    /// ancestor is a regular file.
    func parentDirectory(of names: [String]) throws(Errno) -> NodeID {
        var current = Self.rootID
        for name in names.dropLast() {
            guard let next = directories[current]!.entries[name] else { throw .noSuchFileOrDirectory }
            guard directories[next] != nil else { throw .notDirectory }
            current = next
        }
        return current
    }

    /// The node at `names`, or `nil` if the last component does not exist.
    func node(at names: [String]) throws(Errno) -> NodeID? {
        guard let last = names.last else { return Self.rootID }
        return directories[try parentDirectory(of: names)]!.entries[last]
    }

    /// The directory at `path`: ENOENT if missing, ENOTDIR if a file.
    func directory(at path: FilePath) throws(Errno) -> NodeID {
        guard let node = try node(at: Self.names(in: path)) else { throw .noSuchFileOrDirectory }
        guard directories[node] != nil else { throw .notDirectory }
        return node
    }

    /// The regular file at `path`: ENOENT if missing, EISDIR if a directory.
    func file(at path: FilePath) throws(Errno) -> NodeID {
        guard let node = try node(at: Self.names(in: path)) else { throw .noSuchFileOrDirectory }
        guard files[node] != nil else { throw .isDirectory }
        return node
    }

    func openFile(_ descriptor: FileDescriptor) throws(Errno) -> OpenFile {
        guard let open = descriptors[descriptor.rawValue] else { throw .badFileDescriptor }
        return open
    }

    mutating func allocateNodeID() -> NodeID {
        defer { nextNodeID += 1 }
        return nextNodeID
    }

    // MARK: Descriptors and locks

    mutating func close(_ descriptor: CInt) {
        guard let open = descriptors.removeValue(forKey: descriptor) else { return }
        if lockHolders[open.node] == descriptor { lockHolders[open.node] = nil }
    }

    /// What the kernel does when the process dies: every descriptor closed,
    /// every flock released. The page cache is untouched.
    mutating func closeEverything() {
        descriptors.removeAll()
        lockHolders.removeAll()
        collectGarbage()
    }

    // MARK: Garbage collection

    /// Drops nodes that can never be reached again: not through a visible
    /// entry, not through an open descriptor, and not through any directory
    /// state a power loss could produce (a durable entry or an unsynced
    /// link). The last part matters: a file whose unlink is not durable yet
    /// comes back after a power loss, so its bytes must be kept.
    mutating func collectGarbage() {
        var reachable: Set<NodeID> = [Self.rootID]
        var pending: [NodeID] = [Self.rootID]
        for open in descriptors.values where reachable.insert(open.node).inserted {
            pending.append(open.node)
        }
        while let id = pending.popLast() {
            guard let directory = directories[id] else { continue }
            func visit(_ child: NodeID) {
                if reachable.insert(child).inserted { pending.append(child) }
            }
            directory.entries.values.forEach(visit)
            directory.durableEntries.values.forEach(visit)
            directory.unsynced.forEach { if let node = $0.linkedNode { visit(node) } }
        }
        if files.count + directories.count == reachable.count { return }
        files = files.filter { reachable.contains($0.key) }
        directories = directories.filter { reachable.contains($0.key) }
    }

    // MARK: Walking

    /// Every visible name, with the node it refers to, in sorted path
    /// order. A file linked under several names (possible after a power
    /// loss split a cross-directory rename) is listed under each; a
    /// directory's contents are listed once, under its first name.
    func allNames() -> [(path: FilePath, node: NodeID)] {
        var result: [(path: FilePath, node: NodeID)] = [(FilePath("/"), Self.rootID)]
        var visited: Set<NodeID> = [Self.rootID]
        var queue: [(NodeID, FilePath)] = [(Self.rootID, FilePath("/"))]
        var index = 0
        while index < queue.count {
            let (id, path) = queue[index]
            index += 1
            let entries = directories[id]!.entries
            for name in entries.keys.sorted() {
                let child = entries[name]!
                let childPath = path.appending(name)
                result.append((childPath, child))
                if directories[child] != nil && visited.insert(child).inserted { queue.append((child, childPath)) }
            }
        }
        return result.sorted { $0.path.string < $1.path.string }
    }

    /// Every node reachable through `entries` (visible or durable), with
    /// the first path found, visiting names in sorted order so the result
    /// does not depend on dictionary ordering.
    func paths(durable: Bool) -> [NodeID: FilePath] {
        var result: [NodeID: FilePath] = [Self.rootID: FilePath("/")]
        var queue: [(NodeID, FilePath)] = [(Self.rootID, FilePath("/"))]
        var index = 0
        while index < queue.count {
            let (id, path) = queue[index]
            index += 1
            guard let directory = directories[id] else { continue }
            let entries = durable ? directory.durableEntries : directory.entries
            for name in entries.keys.sorted() {
                let child = entries[name]!
                guard result[child] == nil else { continue }
                let childPath = path.appending(name)
                result[child] = childPath
                queue.append((child, childPath))
            }
        }
        return result
    }
}
