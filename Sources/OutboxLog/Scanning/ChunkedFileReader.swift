import OutboxCollections
import SystemPackage

/// Reads a file front to back in large chunks and hands out windows into
/// its buffer, so a scan costs one `pread` per few MiB, not one per record.
package final class ChunkedFileReader {
    let fileSystem: any FileSystem
    let descriptor: FileDescriptor
    let path: FilePath
    let fileSize: Int64

    /// How much one read fetches at most (it never reads past the end of
    /// the file, nor allocates more than that read needs).
    var chunkSize: Int
    /// A scan's chunk.
    static let scanChunkSize = 4 << 20
    /// The least a page reads at a time: a few hundred records.
    static let pageChunkSize = 256 << 10
    /// How many times the buffer was filled: bytes held since a scan ended
    /// are the scan's (verified) only if this has not moved since.
    private(set) var fills = 0

    /// Mapped, not allocated: see `MappedBuffer`.
    private var storage: MappedBuffer
    private var buffer: UnsafeMutableRawBufferPointer { storage.bytes }
    /// File offset of `buffer[0]`.
    private var bufferStart: Int64 = 0
    /// Valid bytes in `buffer`.
    private var bufferCount = 0

    /// A reader of `fileSize` bytes of `descriptor`, reading into `buffer`
    /// (another reader's, from ``releaseBuffer()``) while it is large
    /// enough.
    package init(
        fileSystem: any FileSystem, descriptor: FileDescriptor, path: FilePath, fileSize: Int64, chunkSize: Int = scanChunkSize,
        reusing buffer: consuming MappedBuffer = MappedBuffer()
    ) {
        self.fileSystem = fileSystem
        self.descriptor = descriptor
        self.path = path
        self.fileSize = fileSize
        self.chunkSize = max(chunkSize, 4096)
        storage = buffer
    }

    /// Hands this reader's buffer on to the next reader of a scan over
    /// several files, whose reads then land in pages already faulted in
    /// (a fresh mapping of a scan's chunk faults in a thousand pages). This
    /// reader holds no bytes afterwards.
    package func releaseBuffer() -> MappedBuffer {
        bufferStart = 0
        bufferCount = 0
        return storage.take()
    }

    /// The bytes `[offset, offset + count)` of the file, or as many of them as
    /// the file has if it ends first (check the returned window's `count`).
    /// Valid until the next call.
    func window(at offset: Int64, count: Int) throws(OutboxLogError) -> UnsafeRawBufferPointer {
        let wanted = Int(min(Int64(count), max(0, fileSize - offset)))
        let bufferEnd = bufferStart + Int64(bufferCount)
        if offset >= bufferStart && offset + Int64(wanted) <= bufferEnd {
            let start = Int(offset - bufferStart)
            return UnsafeRawBufferPointer(rebasing: buffer[start..<(start + wanted)])
        }
        try refill(at: offset, atLeast: wanted)
        return UnsafeRawBufferPointer(rebasing: buffer[0..<wanted])
    }

    /// Whether `[offset, offset + count)` is in the buffer now: a window of
    /// it returns the bytes read then, without reading the file again.
    func holds(_ offset: Int64, count: Int) -> Bool {
        offset >= bufferStart && offset + Int64(count) <= bufferStart + Int64(bufferCount)
    }

    /// Sizes chunks for a page of about `records` records: enough to keep
    /// them (at up to 512 bytes each) in the buffer from the scan that
    /// verifies them until the page returns them, so they are not read and
    /// verified again; at least ``pageChunkSize``, at most a scan's chunk.
    func sizeChunks(forRecords records: Int) {
        let perRecord = 512
        chunkSize =
            records > Self.scanChunkSize / perRecord
            ? Self.scanChunkSize : max(Self.pageChunkSize, records * perRecord)
    }

    private func refill(at offset: Int64, atLeast wanted: Int) throws(OutboxLogError) {
        fills += 1
        // Keep the bytes we already have from `offset` on; read the rest.
        var kept = 0
        let bufferEnd = bufferStart + Int64(bufferCount)
        if offset >= bufferStart && offset < bufferEnd { kept = Int(bufferEnd - offset) }
        let from = Int(offset - bufferStart)
        // One chunk, or what is left of the file if less: reading the end
        // of a segment allocates and reads only what is there.
        let capacity = max(wanted, Int(min(Int64(chunkSize), max(0, fileSize - offset))))
        if capacity > buffer.count {
            let grown: MappedBuffer
            do { grown = try MappedBuffer(byteCount: capacity) } catch {
                throw .io("cannot map a read buffer of \(capacity) bytes", Errno(rawValue: error.errno), file: path, offset: offset)
            }
            if kept > 0 { grown.bytes.baseAddress!.copyMemory(from: buffer.baseAddress! + from, byteCount: kept) }
            storage = grown
        } else if kept > 0 {
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + from, byteCount: kept)
        }
        let toRead = Int(min(Int64(buffer.count - kept), max(0, fileSize - offset - Int64(kept))))
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[kept..<(kept + toRead)])
        let got: Int
        do {
            got = try fileSystem.readFully(descriptor, into: target, at: offset + Int64(kept))
        } catch {
            throw .io("cannot read", error, file: path, offset: offset + Int64(kept))
        }
        bufferStart = offset
        bufferCount = kept + got
        guard bufferCount >= wanted else {
            throw .io("the file is shorter than its size said", .ioError, file: path, offset: offset + Int64(bufferCount))
        }
    }
}
