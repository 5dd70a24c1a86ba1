import OutboxModel
/// How an entry's body record names the file that holds its payload: a
/// body above `OutboxStoreConfiguration.largePayloadThreshold` is written to
/// `payloads/` beside the log (``PayloadFileStore``), and the record carries
/// this instead of the bytes (Docs/STORE-FORMAT.md, "Payload files").
///
/// ```
/// u8 layout (1 plain, 2 sealed) · 16 file id · u64 length · u32 chunk size (sealed; 0 plain) · 32 SHA-256
/// ```
package struct PayloadFileReference: Sendable, Hashable {
    /// How the payload sits in its file.
    package enum Layout: UInt8, Sendable {
        /// The payload's bytes as they are: the file is the request body.
        case plain = 1
        /// AES-GCM boxes of `chunkSize` bytes each (the last one shorter),
        /// each bound to the entry, the file and its place (``PayloadFileCipher``).
        case sealed = 2
    }

    var layout: Layout
    /// Random; the file's name, and part of every sealed chunk's associated data.
    var fileID: [UInt8]
    /// The payload's length in bytes.
    var length: UInt64
    /// Plaintext bytes per sealed chunk; 0 for a plain file.
    var chunkSize: UInt32
    /// SHA-256 of the payload: checked before any of it is handed out whole,
    /// and before the last chunk of a stream.
    var digest: [UInt8]

    package init(layout: Layout, fileID: [UInt8], length: UInt64, chunkSize: UInt32, digest: [UInt8]) {
        self.layout = layout
        self.fileID = fileID
        self.length = length
        self.chunkSize = chunkSize
        self.digest = digest
    }

    static let encodedSize = 1 + 16 + 8 + 4 + 32

    /// How many sealed chunks the payload takes (0 for a plain file).
    var chunkCount: Int {
        guard layout == .sealed, chunkSize > 0 else { return 0 }
        return Int((length + UInt64(chunkSize) - 1) / UInt64(chunkSize))
    }

    /// The file's size on disk.
    var fileSize: Int64 {
        switch layout {
        case .plain: Int64(length)
        case .sealed: Int64(length) + Int64(chunkCount * RecordSealer.overhead)
        }
    }

    func encode(into writer: inout ByteWriter) {
        writer.integer(layout.rawValue)
        writer.raw(fileID)
        writer.integer(length)
        writer.integer(chunkSize)
        writer.raw(digest)
    }

    /// Reads a reference; only what ``encode(into:)`` writes is accepted.
    static func decode(from reader: inout ByteReader) throws(ByteReader.Failure) -> PayloadFileReference {
        let code = try reader.integer(UInt8.self)
        guard let layout = Layout(rawValue: code) else { throw ByteReader.Failure(reason: "unknown payload file layout \(code)") }
        let fileID = try reader.raw(16)
        let length = try reader.integer(UInt64.self)
        let chunkSize = try reader.integer(UInt32.self)
        let digest = try reader.raw(32)
        guard length > 0, length <= UInt64(PayloadFileReference.maximumLength) else {
            throw ByteReader.Failure(reason: "a payload file of \(length) bytes")
        }
        switch layout {
        case .plain where chunkSize != 0: throw ByteReader.Failure(reason: "a plain payload file with chunks")
        case .sealed where chunkSize == 0: throw ByteReader.Failure(reason: "a sealed payload file without chunks")
        default: break
        }
        return PayloadFileReference(layout: layout, fileID: fileID, length: length, chunkSize: chunkSize, digest: digest)
    }

    /// The largest payload a file may hold.
    static let maximumLength = OutboxLimits.maximumPayloadFileBytes
}
