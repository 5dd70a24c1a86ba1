import Crypto
import Foundation
import SystemPackage

/// The body of an entry kept in a file beside the log, because it is larger
/// than `OutboxStoreConfiguration.largePayloadThreshold` (a 50 MB photo,
/// say): ``OutboxEntry/payload`` is then empty and this reads the body.
///
/// Every read checks what the entry recorded when the file was written —
/// its size, its SHA-256, and with encryption each chunk's authentication —
/// and throws ``OutboxError/Code/damagedPayload`` (with
/// ``OutboxError/payloadFile`` saying which file, where and why) rather than
/// return other bytes. Reads run off Swift's cooperative pool.
///
/// ```swift
/// let body = try await delivery.loadPayload()          // the whole body, checked
/// var reader = large.makeChunkReader()                  // or in chunks, for a stream
/// while let chunk = try await reader.next() { try await upload.write(chunk) }
/// ```
public struct OutboxLargePayload: Sendable, Hashable {
    let source: PayloadFileReader

    init(source: PayloadFileReader) { self.source = source }

    /// The body's length in bytes.
    public var count: Int { Int(source.reference.length) }

    /// SHA-256 of the body, as recorded when it was enqueued.
    public var sha256: [UInt8] { source.reference.digest }

    /// The file that holds exactly the body's bytes, when the store is not
    /// encrypted (`nil` when it is: the file is sealed). An upload may read
    /// it directly (`URLSession.upload(for:fromFile:)`, which background
    /// sessions require); check it first with ``verify()``.
    public var plainFile: FilePath? { source.reference.layout == .plain ? source.path : nil }

    /// The file, whatever its layout: for tests and the torture suite.
    package var file: FilePath { source.path }

    /// The whole body, checked.
    public func bytes() async throws(OutboxError) -> [UInt8] {
        // In chunks into one buffer: the body is held once, plus a chunk.
        var reader = makeChunkReader()
        var body: [UInt8] = []
        body.reserveCapacity(count)
        while let chunk = try await reader.next() { body += chunk }
        return body
    }

    /// Reads the whole file and checks it, without keeping it: what the
    /// dispatcher does before an attempt, so a damaged file is quarantined
    /// instead of sent.
    public func verify() async throws(OutboxError) {
        var reader = makeChunkReader()
        while try await reader.next() != nil {}
    }

    /// Reads the body in chunks of about `chunkBytes`, each read off the
    /// cooperative pool. The last chunk is returned only once the whole
    /// body's SHA-256 matched: a stream that ends without an error sent
    /// exactly the body enqueued, and one whose file was damaged fails
    /// before its end (an HTTP request with a `Content-Length` is then never
    /// complete, so the server never applies it).
    public func makeChunkReader(chunkBytes: Int = 1 << 20) -> ChunkReader {
        ChunkReader(source: source, window: source.windowBytes(preferred: max(1, chunkBytes)))
    }

    /// Reads a payload file in order; see ``OutboxLargePayload/makeChunkReader(chunkBytes:)``.
    public struct ChunkReader {
        private let source: PayloadFileReader
        private let window: Int
        private var offset = 0
        private var hasher = SHA256()

        init(source: PayloadFileReader, window: Int) {
            self.source = source
            self.window = window
        }

        /// The next chunk, or `nil` after the last.
        ///
        /// - Throws: ``OutboxError/Code/damagedPayload`` if the file is
        ///   missing, has another size, fails authentication, or does not
        ///   hash to the recorded SHA-256 (then before its last chunk).
        public mutating func next() async throws(OutboxError) -> [UInt8]? {
            let length = Int(source.reference.length)
            guard offset < length else { return nil }
            let (source, offset, window) = (self.source, self.offset, self.window)
            let chunk = try await offThePool { () throws(OutboxError) in try source.read(from: offset, count: window) }
            hasher.update(data: chunk)
            self.offset += chunk.count
            if self.offset >= length, Array(hasher.finalize()) != source.reference.digest {
                throw source.failure(nil, .digestMismatch)
            }
            return chunk
        }
    }
}
