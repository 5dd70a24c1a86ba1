import SystemPackage

extension FileSystem {
    /// Creates a segment file that either exists whole or not at all: the
    /// header is written under a temporary name, synced, renamed into place,
    /// and the directory synced (the ALICE lesson: a new file's name is not
    /// durable until its directory is). Returns a read-write descriptor.
    func createSegment(
        _ header: SegmentHeader, layout: DirectoryLayout
    ) throws(OutboxLogError) -> FileDescriptor {
        let temporary = layout.temporarySegmentFile(base: header.baseSequence)
        let final = layout.segmentFile(base: header.baseSequence)
        let descriptor = try createFile(at: temporary, contents: header.encoded())
        do {
            try rename(temporary, to: final)
        } catch {
            try? close(descriptor)
            try? removeFile(temporary)
            throw .io("cannot rename new segment into place", error, file: final)
        }
        do {
            try syncDirectory(layout.directory)
        } catch {
            // The file stays (an empty segment is harmless to recovery); the
            // descriptor must not: the caller never learns it.
            try? close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Creates (or empties) a file, writes `contents`, and syncs it. Returns
    /// the open, read-write descriptor.
    func createFile(at path: FilePath, contents: [UInt8]) throws(OutboxLogError) -> FileDescriptor {
        let descriptor: FileDescriptor
        do {
            descriptor = try openFile(path, mode: .createOrOpen)
        } catch {
            throw .io("cannot create file", error, file: path)
        }
        do {
            try truncate(descriptor, to: 0)
            try writeFully(descriptor, contents, at: 0)
            try synchronize(descriptor)
        } catch {
            try? close(descriptor)
            try? removeFile(path)
            throw .io("cannot write new file", error, file: path)
        }
        return descriptor
    }

    /// `fsync` of the log directory, with the error the engine reports.
    func syncDirectory(_ directory: FilePath) throws(OutboxLogError) {
        do {
            try synchronizeDirectory(directory)
        } catch {
            throw .io("cannot sync directory", error, file: directory)
        }
    }

    /// Reads a whole (small) file.
    func readWholeFile(_ path: FilePath) throws(OutboxLogError) -> [UInt8] {
        let descriptor: FileDescriptor
        do { descriptor = try openFile(path, mode: .readOnly) } catch { throw .io("cannot open", error, file: path) }
        defer { try? close(descriptor) }
        do {
            return try readBytes(descriptor, count: Int(try self.size(of: descriptor)), at: 0)
        } catch {
            throw .io("cannot read", error, file: path)
        }
    }

    /// Reads and decodes the header of a segment file.
    package func readSegmentHeader(_ descriptor: FileDescriptor) throws(Errno) -> (Result<SegmentHeader, SegmentHeader.DecodeError>, Int64) {
        let size = try self.size(of: descriptor)
        var bytes = try readBytes(descriptor, count: 4096, at: 0)
        // A newer version's header may be larger (its size field is 16 bits).
        if bytes.count >= 12 {
            let declared = Int(bytes[10]) | Int(bytes[11]) << 8
            if declared > bytes.count && Int64(declared) <= size { bytes = try readBytes(descriptor, count: declared, at: 0) }
        }
        return (bytes.withUnsafeBytes { SegmentHeader.decode($0) }, size)
    }
}
