import OutboxLog
import SystemPackage

/// The store's digest secret (``KeyDigester``): 32 random bytes in its
/// directory, made durably by the first open, mode 0600 like every file the
/// file system creates.
enum KeyStoreSecret {
    static let fileName = "keys.secret"

    /// Reads the secret, or makes it (written to a temporary file, synced,
    /// renamed into place, the directory synced) if there is none and
    /// `mayCreate`; throws `ENOENT` if there is none and it may not. Blocking.
    static func loadOrCreate(in directory: FilePath, fileSystem: any FileSystem, mayCreate: Bool) throws(Errno) -> [UInt8] {
        let path = directory.appending(fileName)
        if try fileSystem.itemKind(at: path) == .file {
            let descriptor = try fileSystem.openFile(path, mode: .readOnly)
            defer { try? fileSystem.close(descriptor) }
            let bytes = try fileSystem.readBytes(descriptor, count: 33, at: 0)
            guard bytes.count == 32 else { throw .illegalByteSequence }
            return bytes
        }
        guard mayCreate else { throw .noSuchFileOrDirectory }
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let temporary = directory.appending(fileName + ".tmp")
        do { try fileSystem.removeFile(temporary) } catch where error == .noSuchFileOrDirectory {}
        let descriptor = try fileSystem.openFile(temporary, mode: .createNew)
        do throws(Errno) {
            try fileSystem.writeFully(descriptor, secret, at: 0)
            try fileSystem.synchronize(descriptor)
        } catch {
            try? fileSystem.close(descriptor)
            throw error
        }
        try fileSystem.close(descriptor)
        try fileSystem.rename(temporary, to: path)
        try fileSystem.synchronizeDirectory(directory)
        return secret
    }
}
