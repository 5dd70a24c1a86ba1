import SystemPackage

/// Reads a file front to back in large chunks and hands out windows into
/// its buffer, so a scan costs one `pread` per few MiB, not one per record.
package final class ChunkedFileReader {
    let fileSystem: any FileSystem
    let descriptor: FileDescriptor
    let path: FilePath
    let fileSize: Int64

    private var buffer: UnsafeMutableRawBufferPointer
    /// File offset of `buffer[0]`.
    private var bufferStart: Int64 = 0
    /// Valid bytes in `buffer`.
    private var bufferCount = 0

    package init(fileSystem: any FileSystem, descriptor: FileDescriptor, path: FilePath, fileSize: Int64, chunkSize: Int = 4 << 20) {
        self.fileSystem = fileSystem
        self.descriptor = descriptor
        self.path = path
        self.fileSize = fileSize
        self.buffer = .allocate(byteCount: max(chunkSize, 4096), alignment: 16)
    }

    deinit { buffer.deallocate() }

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

    private func refill(at offset: Int64, atLeast wanted: Int) throws(OutboxLogError) {
        if wanted > buffer.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: wanted, alignment: 16)
            buffer.deallocate()
            buffer = grown
            bufferCount = 0
        }
        // Keep the bytes we already have from `offset` on; read the rest.
        var kept = 0
        let bufferEnd = bufferStart + Int64(bufferCount)
        if offset >= bufferStart && offset < bufferEnd {
            kept = Int(bufferEnd - offset)
            let from = Int(offset - bufferStart)
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
