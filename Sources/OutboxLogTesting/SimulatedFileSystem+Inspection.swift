import SystemPackage

/// Direct access for tests: look at and corrupt files by path, bypassing
/// descriptors, fault rules and call counters.
///
/// The closures passed to these methods run under the file system's lock:
/// they must not call back into the file system.
extension SimulatedFileSystem {
    /// The bytes reads currently return for the file at `path`, or `nil` if
    /// there is no regular file there.
    public func contents(of path: FilePath) -> [UInt8]? {
        state.withLock { state in
            (try? state.file(at: path)).map { state.files[$0]!.visible }
        }
    }

    /// The bytes of the file at `path` that are on stable storage: what
    /// ``PowerLossMode/dropUnsynced`` would leave in it, *provided its name
    /// survives*, which this does not check (see ``isDurable(_:)``). `nil`
    /// if there is no regular file at `path`.
    public func durableContents(of path: FilePath) -> [UInt8]? {
        state.withLock { state in
            (try? state.file(at: path)).map { state.files[$0]!.durable }
        }
    }

    /// Whether the file or directory at `path` survives every possible power
    /// loss exactly as reads see it now: every directory entry on the path
    /// is durable with no unsynced change to that name pending, and, for a
    /// file, its bytes are durable with nothing unsynced. `false` if nothing
    /// is at `path`. A file whose writes were lost to a failed sync is not
    /// durable until they are written and synced again.
    public func isDurable(_ path: FilePath) -> Bool {
        state.withLock { state in
            guard let names = try? SimulatedState.names(in: path) else { return false }
            var current = SimulatedState.rootID
            for name in names {
                guard let directory = state.directories[current], let next = directory.entries[name],
                    directory.durableEntries[name] == next,
                    !directory.unsynced.contains(where: { $0.mentions(name) })
                else { return false }
                current = next
            }
            guard let file = state.files[current] else { return true }
            return file.unsynced.isEmpty && file.visible == file.durable
        }
    }

    /// Replaces the file's bytes *on disk and in the page cache* with
    /// `bytes`, dropping its unsynced operations: the new bytes survive any
    /// crash. Its name's durability is unchanged. For corruption tests.
    ///
    /// - Throws: `ENOENT` if nothing is at `path`, `EISDIR` for a directory.
    public func setContents(of path: FilePath, to bytes: [UInt8]) throws(Errno) {
        try modifyContents(of: path) { $0 = bytes }
    }

    /// Edits the file's bytes in place, on disk and in the page cache alike,
    /// as ``setContents(of:to:)`` does. Descriptors open on the file see the
    /// change.
    public func modifyContents(of path: FilePath, _ body: (inout [UInt8]) -> Void) throws(Errno) {
        try state.withLock { state throws(Errno) in
            let node = try state.file(at: path)
            var bytes = state.files[node]!.visible
            body(&bytes)
            state.files[node]!.reset(to: bytes)
        }
    }

    /// Flips one bit of the file at `path` (on disk and in the page cache).
    /// `offset` must be inside the file.
    public func flipBit(inFile path: FilePath, atByte offset: Int, bit: Int = 0) throws(Errno) {
        try modifyContents(of: path) { bytes in
            precondition(bytes.indices.contains(offset), "offset \(offset) outside the file")
            bytes[offset] ^= UInt8(1) << UInt8(bit & 7)
        }
    }

    /// Overwrites `range` of the file with zeros (a lost or unwritten page),
    /// clamped to the file's size.
    public func zeroBytes(inFile path: FilePath, _ range: Range<Int>) throws(Errno) {
        try modifyContents(of: path) { bytes in
            let clamped = range.clamped(to: bytes.indices)
            bytes.replaceSubrange(clamped, with: repeatElement(0, count: clamped.count))
        }
    }

    /// Cuts or extends (with zeros) the file to `size` bytes, durably.
    public func resizeFile(_ path: FilePath, to size: Int) throws(Errno) {
        try modifyContents(of: path) { DataOperation.truncate(size: size).apply(to: &$0) }
    }

    /// Every name of a regular file, sorted.
    public func allFiles() -> [FilePath] {
        state.withLock { state in state.allNames().filter { state.files[$0.node] != nil }.map(\.path) }
    }

    /// Every name of a directory, the root included, sorted.
    public func allDirectories() -> [FilePath] {
        state.withLock { state in state.allNames().filter { state.directories[$0.node] != nil }.map(\.path) }
    }

    /// How many descriptors are open (to check that code under test closes
    /// what it opens).
    public var openDescriptorCount: Int {
        state.withLock { $0.descriptors.count }
    }

    /// The open descriptors that refer to a file no name leads to any more
    /// (removed, or replaced by a rename), by the path each was opened
    /// with, sorted: on a real disk such a file's space is not reclaimed
    /// until they are closed.
    public var openFilesWithoutName: [FilePath] {
        state.withLock { state in
            let named = Set(state.allNames().map(\.node))
            return state.descriptors.values.filter { !named.contains($0.node) }.map(\.path).sorted { $0.string < $1.string }
        }
    }

    /// The paths that currently open descriptors were opened with, sorted.
    public var openFilePaths: [FilePath] {
        state.withLock { state in state.descriptors.values.map(\.path).sorted { $0.string < $1.string } }
    }
}

extension NamespaceOperation {
    /// Whether the operation creates, removes or replaces the entry `name`.
    func mentions(_ name: String) -> Bool {
        switch self {
        case .link(let linked, _), .unlink(let linked): linked == name
        case .rename(let from, let to, _): from == name || to == name
        }
    }
}
