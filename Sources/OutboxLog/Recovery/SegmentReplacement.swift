import Logging
import SystemPackage

/// Replaces a segment file by a verified copy of its first bytes, the way
/// compaction swaps files in, rather than writing over them in place.
///
/// The copy is written under the segment's `.tmp` name, scanned again
/// record by record (it must hold exactly the records recovery's scan
/// found), synced, renamed over the segment, and the directory synced.
/// A crash at any point leaves the old file or the new one — the same
/// records either way — and the next open deletes a left-over `.tmp`.
struct SegmentReplacement {
    let layout: DirectoryLayout
    let fileSystem: any FileSystem
    let logger: Logger

    /// Copies bytes `0..<end` of `candidate` (records `expected` found)
    /// into a new file that takes its place; returns a read-write
    /// descriptor of the new file.
    func replace(
        _ candidate: SegmentCandidate, header: SegmentHeader, keepingUpTo end: Int64, expecting expected: SegmentScanner.Run
    ) throws(OutboxLogError) -> FileDescriptor {
        let temporary = layout.temporarySegmentFile(base: header.baseSequence)
        let descriptor: FileDescriptor
        do {
            descriptor = try fileSystem.openFile(temporary, mode: .createOrOpen)
        } catch {
            throw .io("cannot create a replacement segment", error, file: temporary)
        }
        do throws(OutboxLogError) {
            do {
                try fileSystem.truncate(descriptor, to: 0)
            } catch {
                throw .io("cannot create a replacement segment", error, file: temporary)
            }
            try copy(candidate, to: descriptor, at: temporary, upTo: end)
            try verify(descriptor, at: temporary, header: header, size: end, expected: expected, source: candidate.path)
            do { try fileSystem.synchronize(descriptor) } catch {
                throw .io("cannot sync a replacement segment", error, file: temporary)
            }
            do { try fileSystem.rename(temporary, to: candidate.path) } catch {
                throw .io("cannot rename a replacement segment into place", error, file: temporary)
            }
        } catch {
            try? fileSystem.close(descriptor)
            try? fileSystem.removeFile(temporary)
            throw error
        }
        do {
            try fileSystem.syncDirectory(layout.directory)
        } catch {
            // The new file is in place under its name, maybe not durably:
            // either file holds the same records. The open fails.
            try? fileSystem.close(descriptor)
            throw error
        }
        logger.debug(
            "replaced a segment by a durable copy of its records",
            metadata: ["file": "\(candidate.name)", "bytes": "\(end)"])
        return descriptor
    }

    private func copy(
        _ candidate: SegmentCandidate, to descriptor: FileDescriptor, at path: FilePath, upTo end: Int64
    ) throws(OutboxLogError) {
        let chunk: Int64 = 1 << 20
        var offset: Int64 = 0
        while offset < end {
            let count = Int(min(chunk, end - offset))
            let bytes: [UInt8]
            do { bytes = try fileSystem.readBytes(candidate.descriptor, count: count, at: offset) } catch {
                throw .io("cannot read the segment to replace", error, file: candidate.path, offset: offset)
            }
            guard bytes.count == count else {
                throw .io("the segment to replace is shorter than its scan", .ioError, file: candidate.path, offset: offset)
            }
            do { try fileSystem.writeFully(descriptor, bytes, at: offset) } catch {
                throw .io("cannot write a replacement segment", error, file: path, offset: offset)
            }
            offset += Int64(count)
        }
    }

    /// The copy must be the segment recovery scanned: the same header, and
    /// exactly the records of its leading run, every CRC verified again.
    private func verify(
        _ descriptor: FileDescriptor, at path: FilePath, header: SegmentHeader, size: Int64,
        expected: SegmentScanner.Run, source: FilePath
    ) throws(OutboxLogError) {
        let reader = ChunkedFileReader(fileSystem: fileSystem, descriptor: descriptor, path: path, fileSize: size)
        // A failed read is an I/O error, never "the records changed".
        let headerBytes = try reader.window(at: 0, count: SegmentHeader.size)
        let sameHeader = (try? SegmentHeader.decode(headerBytes).get()) == header
        let run = try SegmentScanner(reader: reader, header: header).scanRun(
            from: Int64(SegmentHeader.size), previous: nil, resumingAfterDamage: false, visit: { _ in })
        guard sameHeader, run.stop == nil, run.end == size, run.records == expected.records,
            run.lastSequence == expected.lastSequence
        else {
            throw .corruption(
                "the segment's records changed while recovery copied them"
                    + (run.stop.map { " (\($0.damage) at offset \($0.frame) of the copy)" } ?? ""),
                file: source)
        }
    }
}
