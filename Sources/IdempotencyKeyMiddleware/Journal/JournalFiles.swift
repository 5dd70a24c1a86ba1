import Foundation
import OutboxLog
import SystemPackage

/// The key journal's file operations, through the injectable ``FileSystem``
/// (so tests can fail any of them). All of them block: call them from the
/// journal's writer thread or its read queue, never the cooperative pool.
enum JournalFiles {
    static func writeAll(_ bytes: [UInt8], to descriptor: FileDescriptor, at offset: Int64, fileSystem: any FileSystem) throws(Errno) {
        let result = bytes.withUnsafeBytes { raw -> Errno? in
            var done = 0
            while done < raw.count {
                do throws(Errno) {
                    let written = try fileSystem.write(descriptor, UnsafeRawBufferPointer(rebasing: raw[done...]), at: offset + Int64(done))
                    if written <= 0 { return .ioError }
                    done += written
                } catch {
                    return error
                }
            }
            return nil
        }
        if let result { throw result }
    }

    /// Reads `count` bytes at `offset`; fewer only at the end of the file.
    static func read(_ descriptor: FileDescriptor, count: Int, at offset: Int64, fileSystem: any FileSystem) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { raw -> Result<Int, Errno> in
            var done = 0
            while done < raw.count {
                do throws(Errno) {
                    let got = try fileSystem.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[done...]), at: offset + Int64(done))
                    if got == 0 { break }
                    done += got
                } catch {
                    return .failure(error)
                }
            }
            return .success(done)
        }
        let got = try result.get()
        if got < count { bytes.removeLast(count - got) }
        return bytes
    }

    /// The whole file at `path`.
    static func readFile(_ path: FilePath, fileSystem: any FileSystem) throws(Errno) -> [UInt8] {
        let descriptor = try fileSystem.openFile(path, mode: .readOnly)
        defer { try? fileSystem.close(descriptor) }
        let size = try fileSystem.size(of: descriptor)
        return try read(descriptor, count: Int(size), at: 0, fileSystem: fileSystem)
    }

    /// Writes `bytes` as the file `name` atomically and durably: a temporary
    /// file, synced, renamed over `name`, then the directory synced.
    static func writeDurably(_ bytes: [UInt8], named name: String, in directory: FilePath, fileSystem: any FileSystem) throws(Errno) {
        let temporary = directory.appending(name + ".tmp")
        do { try fileSystem.removeFile(temporary) } catch { if error != .noSuchFileOrDirectory { throw error } }
        let descriptor = try fileSystem.openFile(temporary, mode: .createNew)
        do throws(Errno) {
            try writeAll(bytes, to: descriptor, at: 0, fileSystem: fileSystem)
            try fileSystem.synchronize(descriptor)
        } catch {
            try? fileSystem.close(descriptor)
            throw error
        }
        try fileSystem.close(descriptor)
        try fileSystem.rename(temporary, to: directory.appending(name))
        try fileSystem.synchronizeDirectory(directory)
    }

    static func writeIndex(segment: UInt32, entries: [JournalEntry], in directory: FilePath, fileSystem: any FileSystem) throws(Errno) {
        try writeDurably(
            JournalEntry.indexFile(segment: segment, entries: entries), named: JournalFormat.indexName(segment), in: directory,
            fileSystem: fileSystem)
    }

    /// Creates segment `id` with its header, durably (file and directory entry).
    static func createSegment(_ id: UInt32, in directory: FilePath, fileSystem: any FileSystem) throws(Errno) -> FileDescriptor {
        let descriptor = try fileSystem.openFile(directory.appending(JournalFormat.segmentName(id)), mode: .createNew)
        do throws(Errno) {
            try writeAll(JournalFormat.segmentHeader(id: id), to: descriptor, at: 0, fileSystem: fileSystem)
            try fileSystem.synchronize(descriptor)
            try fileSystem.synchronizeDirectory(directory)
            return descriptor
        } catch {
            try? fileSystem.close(descriptor)
            throw error
        }
    }

    /// The store's digest secret, made (32 random bytes, durably) if missing.
    static func loadOrCreateSecret(in directory: FilePath, fileSystem: any FileSystem) throws(Errno) -> [UInt8] {
        let path = directory.appending(JournalFormat.secretName)
        if try fileSystem.itemKind(at: path) == .file {
            let bytes = try readFile(path, fileSystem: fileSystem)
            if bytes.count == 32 { return bytes }
            throw .illegalByteSequence
        }
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try writeDurably(secret, named: JournalFormat.secretName, in: directory, fileSystem: fileSystem)
        return secret
    }

    /// Reads and decodes the record at `location` of a segment.
    static func readRecord(_ location: JournalWriter.Location, in directory: FilePath, fileSystem: any FileSystem) throws(Errno) -> JournalRecord? {
        let descriptor = try fileSystem.openFile(directory.appending(JournalFormat.segmentName(location.segment)), mode: .readOnly)
        defer { try? fileSystem.close(descriptor) }
        let bytes = try read(descriptor, count: Int(location.length), at: Int64(location.offset), fileSystem: fileSystem)
        guard case .record(let record, _) = JournalFormat.readFrame(bytes, at: 0) else { return nil }
        return record
    }
}
