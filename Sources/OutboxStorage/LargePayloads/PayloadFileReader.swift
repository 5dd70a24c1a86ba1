import OutboxLog
import SystemPackage
import OutboxModel

/// Reads one payload file back, checking everything its entry recorded:
/// the size, each sealed chunk's authentication, and (by its caller, over
/// the whole payload) the SHA-256. Blocking: callers run it off the
/// cooperative pool (`OutboxLargePayload`, through ``LargePayloadSource``).
struct PayloadFileReader: LargePayloadSource {
    let path: FilePath
    let reference: PayloadFileReference
    let fileSystem: any FileSystem
    /// For a sealed file; `nil` for a plain one.
    let cipher: PayloadFileCipher?

    static func == (a: Self, b: Self) -> Bool { a.path == b.path && a.reference == b.reference }
    func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(reference)
    }

    var length: Int { Int(reference.length) }
    var digest: [UInt8] { reference.digest }
    var isPlain: Bool { reference.layout == .plain }

    func read(from offset: Int, count: Int) async throws(OutboxError) -> [UInt8] {
        try await offThePool { () throws(OutboxError) in try self.readBlocking(from: offset, count: count) }
    }

    func digestMismatch() -> OutboxError { failure(nil, .digestMismatch) }

    /// Plaintext bytes a window of ``readBlocking(from:count:)`` covers: whole chunks of
    /// a sealed file, about `preferred` bytes.
    func windowBytes(preferred: Int) -> Int {
        guard reference.layout == .sealed else { return max(1, preferred) }
        let chunk = Int(reference.chunkSize)
        return max(1, preferred / chunk) * chunk
    }

    /// The plaintext from `offset` (a multiple of the window), up to `count`
    /// bytes; checks the file's size first.
    func readBlocking(from offset: Int, count: Int) throws(OutboxError) -> [UInt8] {
        let descriptor: FileDescriptor
        do { descriptor = try fileSystem.openFile(path, mode: .readOnly) } catch {
            if error == .noSuchFileOrDirectory { throw failure(nil, .missing) }
            throw failure(nil, .unreadable(error))
        }
        defer { try? fileSystem.close(descriptor) }
        let size: Int64
        do { size = try fileSystem.size(of: descriptor) } catch { throw failure(nil, .unreadable(error)) }
        guard size == reference.fileSize else { throw failure(nil, .wrongSize(expected: reference.fileSize, found: size)) }
        let count = min(count, Int(reference.length) - offset)
        guard let cipher else { return try readExactly(descriptor, count: count, at: Int64(offset)) }
        return try open(descriptor, cipher: cipher, from: offset, count: count)
    }

    /// The sealed chunks covering plaintext `offset ..< offset + count`, opened.
    private func open(
        _ descriptor: FileDescriptor, cipher: PayloadFileCipher, from offset: Int, count: Int
    ) throws(OutboxError) -> [UInt8] {
        let chunk = Int(reference.chunkSize)
        let box = chunk + RecordSealer.overhead
        let first = offset / chunk
        let last = (offset + count - 1) / chunk
        let start = Int64(first) * Int64(box)
        let end = min(Int64(last + 1) * Int64(box), reference.fileSize)
        let sealed = try readExactly(descriptor, count: Int(end - start), at: start)
        var plain: [UInt8] = []
        plain.reserveCapacity(count)
        var at = 0
        for index in first...last {
            let size = min(box, sealed.count - at)
            let isLast = index == reference.chunkCount - 1
            guard let opened = cipher.open(sealed[at..<(at + size)], index: index, isLast: isLast) else {
                throw failure(start + Int64(at), .chunkFailsAuthentication(chunk: index))
            }
            plain += opened
            at += size
        }
        return plain
    }

    private func readExactly(_ descriptor: FileDescriptor, count: Int, at offset: Int64) throws(OutboxError) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = try fileSystem.readBytes(descriptor, count: count, at: offset) } catch {
            throw failure(offset, .unreadable(error))
        }
        // The size was checked: fewer bytes means the file shrank under us.
        guard bytes.count == count else { throw failure(offset + Int64(bytes.count), .unreadable(.ioError)) }
        return bytes
    }

    func failure(_ offset: Int64?, _ reason: OutboxPayloadFileFailure.Reason) -> OutboxError {
        let detail = OutboxPayloadFileFailure(file: path, offset: offset, reason: reason)
        return OutboxError(.damagedPayload, "the entry's payload file cannot give its body back", payloadFile: detail)
    }
}
