import OutboxLog
import SystemPackage
import OutboxModel

/// Spooled entries a queue can never take as they were written, kept in
/// `<queue>/refused/` (0700), one file (0600) each, named
/// `<spool name's 32 hex>-<spool record's sequence number>`
/// (Docs/STORE-FORMAT.md, "Set-aside records"):
///
/// ```
/// 8  magic "OBXASIDE"
/// 1  flags: bit 0 = the content is sealed (AES-GCM under the queue's key,
///    purpose "set aside", bound to the file's name)
/// 4  CRC-32 of the content as stored
/// …  content: the spooled record's value, plain inside (a sealed entry
///    body that opens under the queue's key is stored opened, so that a
///    re-key carries it); or one AES-GCM box of it
/// ```
///
/// They are the writer's acknowledged bytes, refused by the owner (too
/// large for its limits, a value no enqueue accepts): kept, never sent,
/// reported when set aside and counted by ``LogOutboxStore`` afterwards.
/// They live in the queue's directory, so a purge deletes them with it and
/// a seal or re-key (``PartitionRewrite``) carries them over in the new
/// format: with encryption on, none is readable on disk.
///
/// Every method blocks: callers run them off the cooperative pool.
package struct SetAsideRecords: Sendable {
    static let directoryName = "refused"
    static let magic: [UInt8] = Array("OBXASIDE".utf8)
    private static let sealedFlag: UInt8 = 1
    private static let headerSize = 8 + 1 + 4

    let directory: FilePath
    let format: RecordFormat
    let fileSystem: any FileSystem

    package init(queue: FilePath, format: RecordFormat, fileSystem: any FileSystem) {
        directory = queue.appending(Self.directoryName)
        self.format = format
        self.fileSystem = fileSystem
    }

    package static func name(spool: SpoolID, record: UInt64) -> String { spool.hex + "-" + String(record) }

    /// Keeps `stored` (a spool record's value) as `name`; returns its path.
    /// Written whole and synced with its directory before it returns: the
    /// caller then lets the spool go.
    func keep(_ stored: [UInt8], key: LogKey, name: String) throws(OutboxError) -> FilePath {
        let plain = (try? format.plainBody(stored, key: key)) ?? stored
        let path = directory.appending(name)
        try ensureDirectory()
        try SmallFile.write(try encode(plain, name: name), to: path, fileSystem: fileSystem, replacing: true)
        return path
    }

    /// The names of the records kept (none if there is no directory).
    func names() throws(OutboxError) -> [String] {
        do { return try fileSystem.contentsOfDirectory(directory).filter { !$0.hasSuffix(".tmp") }.sorted() } catch {
            if error == .noSuchFileOrDirectory { return [] }
            throw .storage(OutboxLogError(.io, "cannot list the set-aside records", file: directory, errno: error))
        }
    }

    /// The content of the record kept as `name`, checked (CRC, and with a
    /// key, AES-GCM bound to the name).
    func content(of name: String) throws(OutboxError) -> [UInt8] {
        let path = directory.appending(name)
        guard let bytes = try SmallFile.read(path, fileSystem: fileSystem, limit: Int(Int32.max)) else {
            throw OutboxError(.notFound, "\(path): no such set-aside record")
        }
        return try decode(bytes, name: name, path: path)
    }

    /// Copies every record into `target`, in its format (a seal or re-key
    /// of the queue). A record that does not verify was already damage: the
    /// whole file becomes the content of its copy, so it stays evidence —
    /// and, in a sealed target, sealed like the rest.
    func copy(to target: SetAsideRecords) throws(OutboxError) {
        for name in try names() {
            let content: [UInt8]
            do throws(OutboxError) { content = try self.content(of: name) } catch where error.code != .storage {
                guard let bytes = try SmallFile.read(directory.appending(name), fileSystem: fileSystem, limit: Int(Int32.max))
                else { continue }
                content = bytes
            }
            try target.ensureDirectory()
            try SmallFile.write(
                try target.encode(content, name: name), to: target.directory.appending(name), fileSystem: target.fileSystem,
                replacing: true)
        }
    }

    // MARK: The file's form

    /// Package access for the fuzz target (`SpoolFuzzing`).
    package func encode(_ content: [UInt8], name: String) throws(OutboxError) -> [UInt8] {
        var stored = content
        if let sealer = format.sealer {
            stored = try sealer.seal(content, .setAside, partition: format.partition, binding: Array(name.utf8))
        }
        var bytes = Self.magic
        bytes.append(format.isSealed ? Self.sealedFlag : 0)
        bytes.appendLittleEndian(CRC32.checksum(stored))
        return bytes + stored
    }

    /// Package access for the fuzz target (`SpoolFuzzing`).
    package func decode(_ bytes: [UInt8], name: String, path: FilePath) throws(OutboxError) -> [UInt8] {
        func damaged(_ reason: String) -> OutboxError { OutboxError(.corruptEntry, "\(path): \(reason)") }
        guard bytes.count >= Self.headerSize, bytes.starts(with: Self.magic) else {
            throw damaged("not a set-aside record (bad magic or too short)")
        }
        let flags = bytes[8]
        guard flags & ~Self.sealedFlag == 0 else { throw damaged("unknown flags \(flags)") }
        let stored = Array(bytes[Self.headerSize...])
        let crc = bytes.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[9..<13]).loadLittleEndian(at: 0, as: UInt32.self) }
        guard crc == CRC32.checksum(stored) else { throw damaged("fails its CRC") }
        switch (flags & Self.sealedFlag != 0, format.sealer) {
        case (false, nil): return stored
        case (false, .some): throw damaged("a plain record in an encrypted queue")
        case (true, nil): throw OutboxError(.keyRequired, "\(path): sealed; open the queue with its key")
        case (true, let sealer?):
            do { return try sealer.open(stored, .setAside, partition: format.partition, binding: Array(name.utf8)) } catch {
                throw damaged("fails authentication: damaged, tampered with, or moved")
            }
        }
    }

    private func ensureDirectory() throws(OutboxError) {
        do throws(Errno) {
            if try fileSystem.itemKind(at: directory) == .directory { return }
            do { try fileSystem.createDirectory(directory) } catch where error == .fileExists {}
            try fileSystem.synchronizeDirectory(directory.removingLastComponent())
        } catch {
            throw .storage(OutboxLogError(.io, "cannot create the set-aside directory", file: directory, errno: error))
        }
    }
}
