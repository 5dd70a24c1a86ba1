import SystemPackage

/// The state changes behind ``SimulatedFileSystem``'s methods that are
/// more than a line or two.
extension SimulatedState {
    /// pwrite(2) on the page cache; the bytes are logged as unsynced.
    mutating func write(_ descriptor: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno)
        -> Int
    {
        let open = try openFile(descriptor)
        guard open.writable else { throw .badFileDescriptor }
        guard offset >= 0 else { throw .invalidArgument }
        // A zero-length write changes nothing, not even the size.
        if bytes.isEmpty { return 0 }
        guard offset + Int64(bytes.count) <= Self.maximumFileSize else { throw .fileTooLarge }
        files[open.node]!.perform(.write(offset: Int(offset), bytes: Array(bytes)))
        return bytes.count
    }

    /// The paths a descriptor call involves, for fault rules.
    func pathsOf(_ descriptor: FileDescriptor) -> [FilePath] {
        descriptors[descriptor.rawValue].map { [$0.path] } ?? []
    }

    mutating func createDirectory(_ path: FilePath) throws(Errno) {
        let names = try Self.names(in: path)
        guard let name = names.last else { throw .fileExists }  // "/"
        let parent = try parentDirectory(of: names)
        guard directories[parent]!.entries[name] == nil else { throw .fileExists }
        let id = allocateNodeID()
        directories[id] = DirectoryNode()
        directories[parent]!.perform(.link(name: name, node: id))
    }

    /// `mkdir -p` followed by a sync of every directory touched: a fixture.
    mutating func createDurableDirectories(_ path: FilePath) throws(Errno) {
        let names = try Self.names(in: path)
        var current = Self.rootID
        for name in names {
            if let next = directories[current]!.entries[name] {
                guard directories[next] != nil else { throw .notDirectory }
                current = next
            } else {
                let id = allocateNodeID()
                directories[id] = DirectoryNode()
                directories[current]!.perform(.link(name: name, node: id))
                directories[current]!.synchronize()
                current = id
            }
        }
    }

    /// rename(2): atomic replace of the destination; see
    /// ``NamespaceOperation`` for how it becomes durable.
    mutating func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        let sourceNames = try Self.names(in: source)
        let destinationNames = try Self.names(in: destination)
        guard let sourceName = sourceNames.last, let destinationName = destinationNames.last else {
            throw .resourceBusy  // renaming "/" or onto "/"
        }
        let sourceParent = try parentDirectory(of: sourceNames)
        let destinationParent = try parentDirectory(of: destinationNames)
        guard let node = directories[sourceParent]!.entries[sourceName] else { throw .noSuchFileOrDirectory }
        let isDirectory = directories[node] != nil
        if let replaced = directories[destinationParent]!.entries[destinationName] {
            if replaced == node { return }  // same file: POSIX says do nothing
            let replacedIsDirectory = directories[replaced] != nil
            if isDirectory && !replacedIsDirectory { throw .notDirectory }
            if !isDirectory && replacedIsDirectory { throw .isDirectory }
            if replacedIsDirectory && !directories[replaced]!.entries.isEmpty { throw .directoryNotEmpty }
        }
        // A directory cannot move into itself. With no symlinks or directory
        // hard links, a lexical prefix test is exact.
        if isDirectory && destinationNames.count > sourceNames.count
            && Array(destinationNames.prefix(sourceNames.count)) == sourceNames
        {
            throw .invalidArgument
        }
        if sourceParent == destinationParent {
            directories[sourceParent]!.perform(.rename(from: sourceName, to: destinationName, node: node))
        } else {
            directories[sourceParent]!.perform(.unlink(name: sourceName))
            directories[destinationParent]!.perform(.link(name: destinationName, node: node))
        }
        for (number, open) in descriptors {
            if let moved = open.path.renamed(from: source, to: destination) { descriptors[number]!.path = moved }
        }
    }
}
