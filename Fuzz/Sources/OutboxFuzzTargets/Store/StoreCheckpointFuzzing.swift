import Outbox
import Crypto
import OutboxLog
import SystemPackage

/// Fuzz entry point for the store checkpoint (`SCHEDULE`, ``StoreCheckpoint``
/// and ``StoreCheckpointBody``) as an open reads it: the header through
/// ``StoreCheckpoint/readHeader(_:fileSystem:)``, the key check
/// (``StoreCheckpoint/trust(for:)``), the body through
/// ``StoreCheckpoint/readBody(_:format:fileSystem:)`` and
/// ``StoreCheckpointBody/decode(_:into:nextSequence:sealed:)`` into a
/// fresh scheduler, and the end of the load (`finishLoading`). See
/// `FuzzViolation` (Log/FuzzViolation.swift) and Fuzz/README.md.
///
/// What decodes must be what the bytes say: a plain file that loads is
/// exactly the file the store writes for that body, position and next
/// sequence number (a sealed one: the same header values and body; its
/// seals have fresh nonces); a body that loads, encoded again from the
/// scheduler, loads into the same state, and that encoding is a fixed point
/// up to the order of its records (names and completions come from
/// dictionaries). A body that loads is the body a store writes for what
/// it loaded, up to that order: nothing a store never writes (a name no
/// entry uses, or two ids for one name; a log key in a plain queue's body;
/// an "unchanged" flag where it means nothing; one app key held twice) is
/// accepted.
///
/// Control byte: bit 0 repairs the header's and the body's CRCs before
/// reading, so mutations reach the checks behind them; bits 1–2 choose
/// what the data is: 0 a whole file in a queue without a key, 1 a whole
/// file in a queue sealed with ``rawKey``, 2 a plain body alone (u64 next
/// sequence number, then the body) in a plain queue, 3 the same in a sealed
/// queue (its entries carry log keys).
package enum StoreCheckpointFuzzing {
    /// The partition of the fuzzed queue; the seeds' store uses it too.
    package static let partition = "fuzz"
    /// The key of the sealed queue: a fixed test key, also the seeds' store's.
    package static let rawKey = [UInt8](repeating: 0x5C, count: 32)
    /// Where the target keeps the file on its in-memory disk.
    package static let path: FilePath = "/fuzz/SCHEDULE"
    /// The clock of the load's end (`finishLoading`).
    static let now: Int64 = 1_767_225_600_000

    static func format(sealed: Bool) -> RecordFormat {
        RecordFormat(partition: partition, key: sealed ? SymmetricKey(data: rawKey) : nil)
    }

    /// Runs one input with `fileSystem` (an in-memory disk holding `/fuzz`).
    package static func checkpoint(_ input: UnsafeRawBufferPointer, fileSystem: any FileSystem) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        var bytes = Array(input.data)
        let mode = (input.control >> 1) & 3
        let format = format(sealed: mode & 1 == 1)
        if mode >= 2 {
            guard bytes.count >= 8 else { return }
            let next = bytes.withUnsafeBytes { $0.loadLittleEndian(at: 0, as: UInt64.self) }
            return try checkBody(Array(bytes[8...]), nextSequence: next, format: format)
        }
        if input.flag(0) { repairCRCs(&bytes) }
        try store(bytes, at: path, on: fileSystem)
        try checkFile(bytes, format: format, fileSystem: fileSystem)
    }

    static func store(_ bytes: [UInt8], at path: FilePath, on fileSystem: any FileSystem) throws(FuzzViolation) {
        do throws(Errno) {
            let descriptor = try fileSystem.openFile(path, mode: .createOrOpen)
            defer { try? fileSystem.close(descriptor) }
            try fileSystem.truncate(descriptor, to: 0)
            try fileSystem.writeFully(descriptor, bytes, at: 0)
        } catch {
            throw FuzzViolation("harness: cannot store the checkpoint on the file system: \(error)")
        }
    }

    /// The header, then (if the queue may use it) the body, as an open reads them.
    static func checkFile(_ bytes: [UInt8], format: RecordFormat, fileSystem: any FileSystem) throws(FuzzViolation) {
        guard let checkpoint = try readHeader(path, fileSystem: fileSystem) else { return }
        try checkHeader(checkpoint, of: bytes, format: format)
        guard checkpoint.trust(for: format) == .usable else { return }
        let plain: [UInt8]
        do { plain = try checkpoint.readBody(path, format: format, fileSystem: fileSystem) } catch {
            guard error is StoreCheckpoint.Rejection else { throw FuzzViolation("the body's read fails with \(error), not a rejection") }
            return
        }
        try checkWrittenAgain(checkpoint, body: plain, of: bytes, format: format, fileSystem: fileSystem)
        try checkBody(plain, nextSequence: checkpoint.nextSequence, format: format)
    }

    /// The header, or `nil` if it is rejected (with a rejection, nothing else).
    static func readHeader(_ path: FilePath, fileSystem: any FileSystem) throws(FuzzViolation) -> StoreCheckpoint? {
        do {
            guard let checkpoint = try StoreCheckpoint.readHeader(path, fileSystem: fileSystem) else {
                throw FuzzViolation("a checkpoint file that is there reads as none")
            }
            return checkpoint
        } catch let violation as FuzzViolation {
            throw violation
        } catch {
            guard error is StoreCheckpoint.Rejection else { throw FuzzViolation("the header's read fails with \(error), not a rejection") }
            return nil
        }
    }

    /// A header that reads holds only values a store writes, and is trusted only as its key allows.
    static func checkHeader(_ checkpoint: StoreCheckpoint, of bytes: [UInt8], format: RecordFormat) throws(FuzzViolation) {
        guard checkpoint.headerSize + checkpoint.bodySize == bytes.count else {
            throw FuzzViolation("header of \(checkpoint.headerSize) and body of \(checkpoint.bodySize) bytes read from a file of \(bytes.count)")
        }
        guard (1...EntryMetadata.sequenceLimit).contains(checkpoint.nextSequence) else {
            throw FuzzViolation("next sequence number \(checkpoint.nextSequence) accepted")
        }
        guard checkpoint.sealed == (bytes[10] & 1 == 1) else { throw FuzzViolation("the sealed flag reads as \(checkpoint.sealed)") }
        if checkpoint.sealed != format.isSealed, checkpoint.trust(for: format) != .unverified {
            throw FuzzViolation("a \(checkpoint.sealed ? "sealed" : "plain") checkpoint is trusted in a \(format.isSealed ? "sealed" : "plain") queue")
        }
        // What an open computes from the header before the log is read.
        for logNext in [1, checkpoint.position.sequence, checkpoint.position.sequence &+ 1, EntryMetadata.sequenceLimit] {
            guard (1...EntryMetadata.sequenceLimit).contains(logNext) else { continue }
            if let early = checkpoint.earlySequence(logNext: logNext), early > EntryMetadata.sequenceLimit {
                throw FuzzViolation("an early next sequence number of \(early), past any a store reaches")
            }
        }
    }

    /// The file the store writes for the same values: the same bytes (a
    /// sealed file, read again: the same values and body).
    static func checkWrittenAgain(
        _ checkpoint: StoreCheckpoint, body: [UInt8], of bytes: [UInt8], format: RecordFormat, fileSystem: any FileSystem
    ) throws(FuzzViolation) {
        let again: [UInt8]
        do {
            again = try StoreCheckpoint.file(
                body: body, position: checkpoint.position, nextSequence: checkpoint.nextSequence, format: format)
        } catch {
            throw FuzzViolation("a checkpoint that reads cannot be written again: \(error)")
        }
        guard format.isSealed else {
            guard again == bytes else { throw FuzzViolation("a plain checkpoint that reads is not the file written for its values") }
            return
        }
        let copy: FilePath = "/fuzz/SCHEDULE.again"
        try store(again, at: copy, on: fileSystem)
        guard let reread = try readHeader(copy, fileSystem: fileSystem), reread.trust(for: format) == .usable,
            reread.position == checkpoint.position, reread.nextSequence == checkpoint.nextSequence, reread.sealed,
            (try? reread.readBody(copy, format: format, fileSystem: fileSystem)) == body
        else { throw FuzzViolation("a sealed checkpoint that reads, written again, does not read back the same") }
    }

    /// Rewrites the body's CRC and the header's, where the header says they are.
    static func repairCRCs(_ bytes: inout [UInt8]) {
        guard bytes.count >= StoreCheckpoint.fixedSize else { return }
        let headerSize = Int(bytes.withUnsafeBytes { $0.loadLittleEndian(at: 12, as: UInt32.self) })
        guard headerSize >= StoreCheckpoint.fixedSize + 4, headerSize <= bytes.count else { return }
        let bodyCRC = CRC32.checksum(bytes[headerSize...])
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: bodyCRC.littleEndian, toByteOffset: 32, as: UInt32.self) }
        let headerCRC = CRC32.checksum(bytes[..<(headerSize - 4)])
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: headerCRC.littleEndian, toByteOffset: headerSize - 4, as: UInt32.self) }
    }
}
