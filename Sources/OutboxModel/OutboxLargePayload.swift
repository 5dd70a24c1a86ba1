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
    let source: any LargePayloadSource

    /// A payload whose bytes `source` reads: made by the store that wrote the file.
    package init(source: any LargePayloadSource) { self.source = source }

    public static func == (a: Self, b: Self) -> Bool { AnyHashable(a.source) == AnyHashable(b.source) }
    public func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(source)) }

    /// The body's length in bytes.
    public var count: Int { source.length }

    /// SHA-256 of the body, as recorded when it was enqueued.
    public var sha256: [UInt8] { source.digest }

    /// The file that holds exactly the body's bytes, when the store is not
    /// encrypted (`nil` when it is: the file is sealed). An upload may read
    /// it directly (`URLSession.upload(for:fromFile:)`, which background
    /// sessions require); check it first with ``verify()``.
    public var plainFile: FilePath? { source.isPlain ? source.path : nil }

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
        private let source: any LargePayloadSource
        private let window: Int
        private var offset = 0
        private var hasher = SHA256()

        init(source: any LargePayloadSource, window: Int) {
            self.source = source
            self.window = window
        }

        /// The next chunk, or `nil` after the last.
        ///
        /// - Throws: ``OutboxError/Code/damagedPayload`` if the file is
        ///   missing, has another size, fails authentication, or does not
        ///   hash to the recorded SHA-256 (then before its last chunk).
        public mutating func next() async throws(OutboxError) -> [UInt8]? {
            guard offset < source.length else { return nil }
            let chunk = try await source.read(from: offset, count: window)
            hasher.update(data: chunk)
            offset += chunk.count
            if offset >= source.length, Array(hasher.finalize()) != source.digest {
                throw source.digestMismatch()
            }
            return chunk
        }
    }
}

/// Where a large payload's bytes are: the store that wrote the file reads
/// them back, checking what the entry recorded.
package protocol LargePayloadSource: Sendable, Hashable {
    /// The body's length in bytes.
    var length: Int { get }
    /// SHA-256 of the body, as recorded at enqueue.
    var digest: [UInt8] { get }
    /// The file.
    var path: FilePath { get }
    /// Whether the file holds exactly the body's bytes (not sealed).
    var isPlain: Bool { get }
    /// Bytes a read of about `preferred` bytes covers (whole sealed chunks).
    func windowBytes(preferred: Int) -> Int
    /// The checked plaintext from `offset` (a multiple of the window), up to
    /// `count` bytes, read off the cooperative pool.
    func read(from offset: Int, count: Int) async throws(OutboxError) -> [UInt8]
    /// The error for a body whose bytes do not hash to ``digest``.
    func digestMismatch() -> OutboxError
}
