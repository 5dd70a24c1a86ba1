import OutboxCollections
import OutboxLogTesting
import SystemPackage
import Testing

@testable import OutboxLog

/// A scan over several files hands one read buffer from reader to reader:
/// each reader sees its own file's bytes, never what the buffer held for the
/// one before, whether its file is smaller or larger than that one's.
@Suite("Chunked file reader")
struct ChunkedFileReaderTests {
    /// A file of `count` bytes, byte `i` being `(i * 7 + seed) % 251`.
    static func file(_ disk: SimulatedFileSystem, _ name: String, count: Int, seed: Int) throws -> (FileDescriptor, [UInt8]) {
        let bytes = (0..<count).map { UInt8(($0 * 7 + seed) % 251) }
        let descriptor = try disk.openFile(FilePath("/data/\(name)"), mode: .createNew)
        try disk.writeFully(descriptor, bytes, at: 0)
        return (descriptor, bytes)
    }

    static func reader(_ disk: SimulatedFileSystem, _ descriptor: FileDescriptor, count: Int, buffer: consuming MappedBuffer)
        -> ChunkedFileReader
    {
        ChunkedFileReader(
            fileSystem: disk, descriptor: descriptor, path: "/data/f", fileSize: Int64(count), chunkSize: 64 << 10,
            reusing: buffer)
    }

    @Test("a buffer handed on serves the next file's bytes, smaller or larger, and the reader that gave it up reads again")
    func bufferHandedOn() throws {
        let disk = SimulatedFileSystem(directories: ["/data"])
        let (large, largeBytes) = try Self.file(disk, "large", count: 100_000, seed: 1)
        let (small, smallBytes) = try Self.file(disk, "small", count: 5_000, seed: 2)
        let (larger, largerBytes) = try Self.file(disk, "larger", count: 300_000, seed: 3)

        let first = Self.reader(disk, large, count: largeBytes.count, buffer: MappedBuffer())
        #expect(Array(try first.window(at: 0, count: 100)) == Array(largeBytes[0..<100]))
        #expect(Array(try first.window(at: 90_000, count: 100)) == Array(largeBytes[90_000..<90_100]))
        var buffer = first.releaseBuffer()
        #expect(buffer.count >= 64 << 10, "the first reader's buffer is handed on whole")

        let second = Self.reader(disk, small, count: smallBytes.count, buffer: buffer.take())
        #expect(Array(try second.window(at: 0, count: 5_000)) == smallBytes)
        // Asked past its end, it has only its own bytes: none of the large file's.
        #expect(Array(try second.window(at: 4_990, count: 100)) == Array(smallBytes[4_990...]))
        buffer = second.releaseBuffer()

        let third = Self.reader(disk, larger, count: largerBytes.count, buffer: buffer.take())
        #expect(Array(try third.window(at: 250_000, count: 100_000)) == Array(largerBytes[250_000...]))

        // The reader whose buffer went on maps a new one when asked again.
        #expect(Array(try first.window(at: 10, count: 20)) == Array(largeBytes[10..<30]))
    }

    @Test("taking a mapped buffer leaves the giver empty and hands on the same pages")
    func takeHandsOnTheMapping() throws {
        var buffer = try MappedBuffer(byteCount: 4096)
        buffer.bytes[100] = 42
        let start = buffer.bytes.baseAddress
        let taken = buffer.take()
        #expect(buffer.count == 0)
        #expect(taken.bytes.baseAddress == start)
        #expect(taken.bytes[100] == 42)
    }
}
