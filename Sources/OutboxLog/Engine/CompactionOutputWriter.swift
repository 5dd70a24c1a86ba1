import SystemPackage

/// Writes a compaction's output segments: frames are copied in sequence
/// order, resealed with each output's new salt, and a new output starts when
/// one reaches the segment size. Each output covers a contiguous range of
/// sequence numbers, recorded in its header, so the next open can check that
/// no range is missing.
struct CompactionOutputWriter {
    struct Output {
        var id: UInt32
        var header: SegmentHeader
        var file: SegmentFile
        var size: Int64
        var records: Int
    }

    private struct Current {
        var id: UInt32
        var base: UInt64
        var salt: UInt64
        var crcSeed: UInt32
        var descriptor: FileDescriptor
        var path: FilePath
        var size: Int64
        var records: Int
        var buffer: [UInt8]
    }

    let layout: DirectoryLayout
    let fileSystem: any FileSystem
    let segmentSize: Int
    let runBase: UInt64
    let coverEnd: UInt64
    private let allocateID: () -> UInt32
    private(set) var outputs: [Output] = []
    private var current: Current?
    private static let bufferLimit = 1 << 20

    init(
        layout: DirectoryLayout, fileSystem: any FileSystem, segmentSize: Int, runBase: UInt64, coverEnd: UInt64,
        allocateID: @escaping () -> UInt32
    ) {
        self.layout = layout
        self.fileSystem = fileSystem
        self.segmentSize = segmentSize
        self.allocateID = allocateID
        self.runBase = runBase
        self.coverEnd = coverEnd
    }

    /// Copies one verified frame; returns where it now lives.
    mutating func append(frame: UnsafeRawBufferPointer, sequence: UInt64) throws(OutboxLogError) -> Location {
        if let open = current, open.records > 0, open.size + Int64(frame.count) > Int64(segmentSize) {
            try close(coverEnd: sequence)
        }
        if current == nil { try open(base: outputs.isEmpty ? runBase : sequence) }
        let start = current!.buffer.count
        current!.buffer.append(contentsOf: frame)
        let seed = current!.crcSeed
        current!.buffer.withUnsafeMutableBytes { raw in
            RecordFrame.reseal(UnsafeMutableRawBufferPointer(rebasing: raw[start...]), crcSeed: seed)
        }
        let location = Location(segment: current!.id, offset: UInt32(current!.size), length: UInt32(frame.count))
        current!.size += Int64(frame.count)
        current!.records += 1
        if current!.buffer.count >= Self.bufferLimit { try flushBuffer() }
        return location
    }

    /// Closes the last output. With `needsPlaceholder`, a run with no live
    /// record still produces one empty output carrying its range.
    mutating func finish(needsPlaceholder: Bool) throws(OutboxLogError) -> [Output] {
        if current == nil && outputs.isEmpty && needsPlaceholder { try open(base: runBase) }
        if current != nil { try close(coverEnd: coverEnd) }
        return outputs
    }

    /// Deletes everything written so far (the compaction did not commit).
    mutating func abandon() {
        if let open = current {
            try? fileSystem.close(open.descriptor)
            try? fileSystem.removeFile(open.path)
            current = nil
        }
        for output in outputs { try? fileSystem.removeFile(layout.compactingSegmentFile(base: output.header.baseSequence)) }
        outputs.removeAll()
    }

    private mutating func open(base: UInt64) throws(OutboxLogError) {
        let path = layout.compactingSegmentFile(base: base)
        let descriptor: FileDescriptor
        do {
            descriptor = try fileSystem.openFile(path, mode: .createOrOpen)
            try fileSystem.truncate(descriptor, to: 0)
        } catch {
            throw .io("cannot create compaction output", error, file: path)
        }
        let salt = UInt64.random(in: 1...UInt64.max)
        let seed = SegmentHeader(baseSequence: base, coverEnd: nil, salt: salt).recordCRCSeed
        current = Current(
            id: allocateID(), base: base, salt: salt, crcSeed: seed, descriptor: descriptor, path: path,
            size: Int64(SegmentHeader.size), records: 0, buffer: [])
        current!.buffer.reserveCapacity(Self.bufferLimit + 4096)
    }

    private mutating func flushBuffer() throws(OutboxLogError) {
        guard var open = current, !open.buffer.isEmpty else { return }
        let offset = open.size - Int64(open.buffer.count)
        do {
            try fileSystem.writeFully(open.descriptor, open.buffer, at: offset)
        } catch {
            throw .io("cannot write compaction output", error, file: open.path, offset: offset)
        }
        open.buffer.removeAll(keepingCapacity: true)
        current = open
    }

    /// Writes the header (now that the range is known) and syncs the file.
    private mutating func close(coverEnd: UInt64) throws(OutboxLogError) {
        try flushBuffer()
        guard let open = current else { return }
        let header = SegmentHeader(baseSequence: open.base, coverEnd: coverEnd, salt: open.salt)
        do {
            try fileSystem.writeFully(open.descriptor, header.encoded(), at: 0)
            try fileSystem.synchronize(open.descriptor)
        } catch {
            throw .io("cannot finish compaction output", error, file: open.path)
        }
        let file = SegmentFile(
            id: open.id, header: header, path: layout.segmentFile(base: open.base), descriptor: open.descriptor,
            fileSystem: fileSystem)
        outputs.append(Output(id: open.id, header: header, file: file, size: open.size, records: open.records))
        current = nil
    }
}
