import Dispatch
import OutboxLog
import SystemPackage
import OutboxModel

/// The small files beside the logs (a root's salt, a queue's name): read
/// whole, and written whole through a synced temporary file and a rename
/// followed by a sync of the directory, so a crash leaves the old file or
/// the new one, never a part. Blocking: callers run off the cooperative pool.
enum SmallFile {
    /// Larger files are not ours: refused rather than read.
    static let maximumSize = 4096

    /// The file's bytes, or `nil` if it does not exist; a file over
    /// `limit` bytes is refused unread.
    static func read(_ path: FilePath, fileSystem: any FileSystem, limit: Int = maximumSize) throws(OutboxError) -> [UInt8]? {
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw failure("cannot open", path, error)
        }
        defer { try? fileSystem.close(descriptor) }
        do {
            let size = try fileSystem.size(of: descriptor)
            guard size <= limit else {
                throw OutboxError(.corruptEntry, "\(path): \(size) bytes, more than a \(path.lastComponent?.string ?? "") file holds")
            }
            var bytes = [UInt8](repeating: 0, count: Int(size))
            var done = 0
            while done < bytes.count {
                let count = try bytes.withUnsafeMutableBytes { (raw) throws(Errno) -> Int in
                    try fileSystem.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[done...]), at: Int64(done))
                }
                if count == 0 { break }
                done += count
            }
            return Array(bytes[..<done])
        } catch let error as Errno {
            throw failure("cannot read", path, error)
        } catch let error as OutboxError {
            throw error
        } catch {
            throw OutboxError(.invalidArgument, "\(path): \(error)")
        }
    }

    /// Writes `bytes` to `path` (0600) through `path.tmp`; with `replacing`
    /// unset, an existing file is kept as it is. With `synced` unset, neither
    /// the file nor the directory is synced: for a file that is only advice
    /// (a queue's snapshot), which a crash may leave old or missing.
    static func write(
        _ bytes: [UInt8], to path: FilePath, fileSystem: any FileSystem, replacing: Bool, synced: Bool = true
    ) throws(OutboxError) {
        let temporary = FilePath(path.string + ".tmp")
        let directory = path.removingLastComponent()
        do throws(Errno) {
            try? fileSystem.removeFile(temporary)
            let descriptor = try fileSystem.openFile(temporary, mode: .createNew)
            // close(2) releases the descriptor even when it reports an error:
            // it is never closed twice (its number may already be another file's).
            var closed = false
            do throws(Errno) {
                let written = bytes.withUnsafeBytes { raw -> Result<Void, Errno> in
                    var done = 0
                    while done < raw.count {
                        do throws(Errno) {
                            let count = try fileSystem.write(descriptor, UnsafeRawBufferPointer(rebasing: raw[done...]), at: Int64(done))
                            if count <= 0 { return .failure(.ioError) }
                            done += count
                        } catch {
                            return .failure(error)
                        }
                    }
                    return .success(())
                }
                try written.get()
                if synced { try fileSystem.synchronize(descriptor) }
                closed = true
                try fileSystem.close(descriptor)
            } catch {
                if !closed { try? fileSystem.close(descriptor) }
                throw error
            }
            if !replacing, try fileSystem.itemKind(at: path) != nil {
                try fileSystem.removeFile(temporary)
                return
            }
            try fileSystem.rename(temporary, to: path)
            if synced { try fileSystem.synchronizeDirectory(directory) }
        } catch {
            try? fileSystem.removeFile(temporary)
            throw failure("cannot write", path, error)
        }
    }

    private static func failure(_ what: String, _ path: FilePath, _ errno: Errno) -> OutboxError {
        .storage(OutboxLogError(.io, "\(what) \(path.lastComponent?.string ?? "the file")", file: path, errno: errno))
    }
}

/// Runs blocking file work (syncs, renames, small reads) on a dispatch
/// queue, never on Swift's cooperative pool.
func offThePool<Result: Sendable>(
    _ work: @escaping @Sendable () throws(OutboxError) -> Result
) async throws(OutboxError) -> Result {
    let outcome: Swift.Result<Result, OutboxError> = await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .utility).async {
            do throws(OutboxError) { continuation.resume(returning: .success(try work())) } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try outcome.get()
}
