#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Square Tape's `QueueFile` (Java), modelled in Swift so the queue rows can
/// measure its design here, where Tape itself cannot be built: one file, a
/// fixed header, elements in a circular buffer after it. Written from a
/// description of the design, not from Tape's code.
///
/// Tape's QueueFile is not thread-safe and its callers serialise on it, so
/// one `Mutex` guards the state and every I/O is done under it: producers and
/// consumers wait for each other, as they do with Tape.
final class TapeStyleQueue: BlockingQueue {
    let name: String
    private let ring: Mutex<TapeRing>

    /// Opens (creating) the queue file at `path`. `.durable` opens it with
    /// `O_DSYNC`, Tape's "rwd" mode: every write, element and header, is
    /// synced before it returns. `.written` leaves writes in the page cache.
    init(path: String, durability: QueueDurability) throws {
        name = durability == .durable ? "Tape-style QueueFile (O_DSYNC)" : "Tape-style QueueFile"
        ring = Mutex(try TapeRing(path: path, durable: durability == .durable))
    }

    func produce(_ element: [UInt8]) throws {
        try ring.withLock { ring in try ring.add(element, synced: true) }
    }

    /// Tape's `peek` for up to `max` elements, then `remove(n)` of them: the
    /// header rewrite that removes them is the one synced write.
    func take(max: Int) throws -> [[UInt8]] {
        guard max > 0 else { return [] }
        return try ring.withLock { ring in
            let (elements, next) = try ring.peek(max: max)
            try ring.remove(elements.count, newFirst: next)
            return elements
        }
    }

    /// Adds through the descriptor without `O_DSYNC` (the fill is not timed),
    /// then syncs once in durable mode so the timed part starts from a
    /// durable file with no dirty pages left behind by the fill.
    func fill(_ elements: [[UInt8]]) throws {
        try ring.withLock { ring in
            for element in elements { try ring.add(element, synced: false) }
            if ring.durable { try ring.syncUnsyncedWrites() }
        }
    }

    func close() throws { ring.withLock { ring in ring.closeFiles() } }

    deinit { ring.withLock { ring in ring.closeFiles() } }
}

/// An element's place in the file: where its 4-byte length starts, and how
/// many data bytes follow it.
private struct TapeElement {
    var position: Int
    var length: Int
    static let none = TapeElement(position: 0, length: 0)
}

/// The file and what Tape keeps of it in memory: the header's fields, and
/// the first and last elements' lengths (read once, not on every operation).
///
/// Layout: a 32-byte header at offset 0 — a version word, the file length,
/// the element count, the first and the last element's offsets, big-endian —
/// then the ring buffer from offset 32 to the file length. Each element is a
/// 4-byte big-endian length and its data; an element that reaches the end of
/// the file continues at offset 32.
private struct TapeRing {
    static let headerLength = 32
    static let initialLength = 4096
    static let version: UInt32 = 0x8000_0001
    /// Bytes copied at a time when an expansion moves the wrapped part.
    static let copyChunk = 1 << 20

    let path: String
    let durable: Bool
    /// `O_DSYNC` in durable mode; the same as `plainFD` otherwise.
    private(set) var syncedFD: Int32
    /// Never `O_DSYNC`: the fill's writes, and every read.
    private(set) var plainFD: Int32
    private(set) var fileLength: Int
    private(set) var count: Int
    private(set) var first: TapeElement
    private(set) var last: TapeElement

    init(path: String, durable: Bool) throws {
        self.path = path
        self.durable = durable
        let plain = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard plain >= 0 else { throw TapeFileError.failed("open \(path)") }
        let synced = durable ? open(path, O_RDWR | O_CLOEXEC | O_DSYNC) : plain
        guard synced >= 0 else {
            let error = TapeFileError.failed("open O_DSYNC \(path)")
            _ = close(plain)
            throw error
        }
        (plainFD, syncedFD) = (plain, synced)
        (fileLength, count, first, last) = (Self.initialLength, 0, .none, .none)
        do {
            let size = lseek(plain, 0, SEEK_END)
            guard size >= 0 else { throw TapeFileError.failed("lseek \(path)") }
            // Each row starts from a new file: reopening one is not needed here.
            guard size == 0 else { throw TapeFileError("\(path) is not empty: the queue expects a new file") }
            try truncateFile(to: Self.initialLength)
            try writeHeader(fileLength: Self.initialLength, count: 0, first: 0, last: 0, fd: synced)
        } catch {
            closeFiles()
            throw error
        }
    }

    /// `position`, folded back into the ring if it is past the end of the file.
    func wrap(_ position: Int) -> Int {
        position < fileLength ? position : Self.headerLength + position - fileLength
    }

    /// Header plus elements, counting from the first element to the end of
    /// the last, across the wrap if the used region wraps.
    var usedBytes: Int {
        guard count > 0 else { return Self.headerLength }
        let endOfLast = last.position + 4 + last.length
        if last.position >= first.position {
            return endOfLast - first.position + Self.headerLength
        }
        return endOfLast + fileLength - first.position
    }

    /// Tape's `add`: the element (its length and data, in one write, split
    /// at the wrap point if it crosses it) after the last one, then the
    /// header. With `synced`, both writes go through the `O_DSYNC` descriptor,
    /// so a produce costs two synced writes (three when it wraps).
    mutating func add(_ data: [UInt8], synced: Bool) throws {
        guard data.count <= Int(Int32.max) - 4 else { throw TapeFileError("element of \(data.count) bytes is too large") }
        let fd = synced ? syncedFD : plainFD
        try expandIfNeeded(for: 4 + data.count, fd: fd)
        let wasEmpty = count == 0
        let position = wasEmpty ? Self.headerLength : wrap(last.position + 4 + last.length)
        var record: [UInt8] = []
        record.reserveCapacity(4 + data.count)
        record.appendBigEndian(UInt64(data.count), width: 4)
        record.append(contentsOf: data)
        try ringWrite(record, at: position, fd: fd)
        let newLast = TapeElement(position: position, length: data.count)
        let newFirst = wasEmpty ? newLast : first
        try writeHeader(fileLength: fileLength, count: count + 1, first: newFirst.position, last: position, fd: fd)
        (count, first, last) = (count + 1, newFirst, newLast)
    }

    /// Tape's expansion, when the free bytes cannot hold `needed`: double
    /// the file until they can; if the used region wraps, move the wrapped
    /// part (buffer start to the end of the last element) to the old end of
    /// the file so the region is contiguous; then rewrite the header.
    private mutating func expandIfNeeded(for needed: Int, fd: Int32) throws {
        var remaining = fileLength - usedBytes
        guard remaining < needed else { return }
        var newLength = fileLength
        while remaining < needed { (remaining, newLength) = (remaining + newLength, newLength * 2) }
        try truncateFile(to: newLength)
        var newLast = last
        if count > 0 {
            let endOfLast = wrap(last.position + 4 + last.length)
            if endOfLast <= first.position {
                try copy(from: Self.headerLength, count: endOfLast - Self.headerLength, to: fileLength, fd: fd)
            }
            if last.position < first.position { newLast.position = fileLength + last.position - Self.headerLength }
        }
        try writeHeader(fileLength: newLength, count: count, first: first.position, last: newLast.position, fd: fd)
        (fileLength, last) = (newLength, newLast)
    }

    /// Tape's `peek`, for up to `max` elements from the first, following the
    /// wrap; also returns the element after them (the new first once they
    /// are removed; its length is read only if there is one).
    func peek(max: Int) throws -> (elements: [[UInt8]], next: TapeElement) {
        let taken = Swift.min(max, count)
        var elements: [[UInt8]] = []
        elements.reserveCapacity(taken)
        var element = first
        for index in 0..<taken {
            elements.append(try ringRead(count: element.length, at: element.position + 4))
            element = TapeElement(position: wrap(element.position + 4 + element.length), length: 0)
            if index + 1 < count { element.length = try checkedLength(at: element.position) }
        }
        return (elements, element)
    }

    /// Tape's `remove(n)`: the header now starts at `newFirst`. Removing
    /// every element is Tape's `clear`: the header is reset and the file cut
    /// back to its initial length. Tape also zeroes the removed bytes (when
    /// asked to); this does not — they are simply free again.
    mutating func remove(_ removed: Int, newFirst: TapeElement) throws {
        guard removed > 0 else { return }
        guard removed < count else {
            try writeHeader(fileLength: Self.initialLength, count: 0, first: 0, last: 0, fd: syncedFD)
            let wasLength = fileLength
            (fileLength, count, first, last) = (Self.initialLength, 0, .none, .none)
            if wasLength > Self.initialLength { try truncateFile(to: Self.initialLength) }
            return
        }
        try writeHeader(
            fileLength: fileLength, count: count - removed, first: newFirst.position, last: last.position, fd: syncedFD)
        (count, first) = (count - removed, newFirst)
    }

    /// An element's length read back, checked against what the ring holds,
    /// so that a corrupt file throws instead of crashing or reading garbage.
    private func checkedLength(at position: Int) throws -> Int {
        let length = Int(Int32(bitPattern: UInt32(bigEndianBytes: try ringRead(count: 4, at: position)[...])))
        guard length >= 0, 4 + length <= usedBytes - Self.headerLength else {
            throw TapeFileError("\(path): element at \(position) claims \(length) bytes, the ring holds \(usedBytes)")
        }
        return length
    }

    private func writeHeader(fileLength: Int, count: Int, first: Int, last: Int, fd: Int32) throws {
        var header: [UInt8] = []
        header.reserveCapacity(Self.headerLength)
        header.appendBigEndian(UInt64(Self.version), width: 4)
        header.appendBigEndian(UInt64(fileLength), width: 8)
        header.appendBigEndian(UInt64(count), width: 4)
        header.appendBigEndian(UInt64(first), width: 8)
        header.appendBigEndian(UInt64(last), width: 8)
        try writeFully(header[...], at: 0, fd: fd)
    }

    /// Writes `bytes` at `position` in the ring, the part past the end of the
    /// file at the start of the buffer.
    private func ringWrite(_ bytes: [UInt8], at position: Int, fd: Int32) throws {
        let start = wrap(position)
        let head = Swift.min(bytes.count, fileLength - start)
        try writeFully(bytes[..<head], at: start, fd: fd)
        if head < bytes.count { try writeFully(bytes[head...], at: Self.headerLength, fd: fd) }
    }

    private func ringRead(count: Int, at position: Int) throws -> [UInt8] {
        let start = wrap(position)
        let head = Swift.min(count, fileLength - start)
        var bytes = try readFully(count: head, at: start)
        if head < count { bytes += try readFully(count: count - head, at: Self.headerLength) }
        return bytes
    }

    private func copy(from source: Int, count: Int, to destination: Int, fd: Int32) throws {
        var done = 0
        while done < count {
            let chunk = try readFully(count: Swift.min(Self.copyChunk, count - done), at: source + done)
            try writeFully(chunk[...], at: destination + done, fd: fd)
            done += chunk.count
        }
    }

    /// `pwrite` until every byte is written (retrying on EINTR).
    private func writeFully(_ bytes: ArraySlice<UInt8>, at offset: Int, fd: Int32) throws {
        try bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let written = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw TapeFileError.failed("pwrite \(buffer.count - done) bytes at \(offset + done) of \(path)")
                }
                done += written
            }
        }
    }

    /// `pread` until `count` bytes are read; the end of the file first is an error.
    private func readFully(count: Int, at offset: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let read = pread(plainFD, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if read < 0 {
                    if errno == EINTR { continue }
                    throw TapeFileError.failed("pread \(count - done) bytes at \(offset + done) of \(path)")
                }
                guard read > 0 else {
                    throw TapeFileError("\(path): end of file at \(offset + done), \(count - done) bytes short")
                }
                done += read
                initialized = done
            }
        }
    }

    private func truncateFile(to length: Int) throws {
        guard ftruncate(plainFD, off_t(length)) == 0 else { throw TapeFileError.failed("ftruncate \(path) to \(length)") }
    }

    /// `fdatasync` of what went through the plain descriptor (`O_DSYNC` only
    /// syncs the range each write covered).
    func syncUnsyncedWrites() throws {
        #if canImport(Darwin)
        guard fcntl(plainFD, F_FULLFSYNC) == 0 else { throw TapeFileError.failed("F_FULLFSYNC \(path)") }
        #else
        guard fdatasync(plainFD) == 0 else { throw TapeFileError.failed("fdatasync \(path)") }
        #endif
    }

    mutating func closeFiles() {
        if syncedFD >= 0, syncedFD != plainFD { _ = close(syncedFD) }
        if plainFD >= 0 { _ = close(plainFD) }
        (syncedFD, plainFD) = (-1, -1)
    }
}

/// A failed call (with its errno) or a file that does not hold a valid queue.
struct TapeFileError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }

    /// `what` failed with the current errno.
    static func failed(_ what: String) -> TapeFileError {
        let code = errno
        return TapeFileError("\(what): errno \(code) (\(String(cString: strerror(code))))")
    }
}

extension Array where Element == UInt8 {
    /// Appends the low `width` bytes of `value`, most significant first.
    fileprivate mutating func appendBigEndian(_ value: UInt64, width: Int) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}

extension FixedWidthInteger {
    /// The integer whose big-endian bytes are `bytes` (as many as it has).
    fileprivate init(bigEndianBytes bytes: ArraySlice<UInt8>) {
        self = bytes.reduce(0) { ($0 << 8) | Self(truncatingIfNeeded: $1) }
    }
}
