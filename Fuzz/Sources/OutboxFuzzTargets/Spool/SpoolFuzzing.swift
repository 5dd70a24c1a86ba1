import Outbox
import Crypto
import OutboxLog
import SystemPackage

/// Fuzz entry point for what an owner reads of the spools another process
/// wrote (Docs/OUTBOX.md, "Enqueue from another process") and of the
/// records it set aside: spool and guard names (``SpoolLayout``), the
/// queue's marks (``SpoolMark``), a spooled entry record as
/// ``SpoolReading/entry(key:value:format:queueFormat:)`` takes it, and a
/// set-aside record file (``SetAsideRecords``). See `FuzzViolation` in
/// OutboxLog and Fuzz/README.md.
///
/// What decodes must be what the bytes say: a name that decodes is the name
/// of what it decodes to, and every name the store makes decodes; a mark
/// is written back as the same bytes; a spooled entry encodes back to its
/// plain body, and moved into a queue of the other format reads back as
/// the same entry; a set-aside file is the file written for its content.
///
/// Control byte, bits 0–1: 0 a name (the data as UTF-8, any string), 1 a
/// mark's value, 2 a spooled record (a 17-byte log key, then the value), 3
/// a set-aside file. Bit 2: the queue is sealed with ``rawKey``. Bit 3: a
/// plain spooled record's key is taken from the id in its body (so that
/// mutations of the body pass the key check); a set-aside file's CRC is
/// repaired.
package enum SpoolFuzzing {
    package static let partition = "fuzz"
    /// The key of the sealed queue: a fixed test key, also the seeds' store's.
    package static let rawKey = [UInt8](repeating: 0x3D, count: 32)
    /// The name the fuzzed set-aside file has (sealed ones are bound to it).
    static let setAsideName = SetAsideRecords.name(spool: SpoolID(bytes: Array(0x10..<0x20)), record: 7)

    static func format(sealed: Bool) -> RecordFormat {
        RecordFormat(partition: partition, key: sealed ? SymmetricKey(data: rawKey) : nil)
    }

    package static func spool(_ input: UnsafeRawBufferPointer) throws(FuzzViolation) {
        guard let input = FuzzInput(input) else { return }
        let bytes = Array(input.data)
        let format = format(sealed: input.flag(2))
        switch input.control & 3 {
        case 0: try name(String(decoding: bytes, as: UTF8.self))
        case 1: try mark(bytes)
        case 2: try record(bytes, format: format, keyFromBody: input.flag(3))
        default: try setAside(bytes, format: format, repair: input.flag(3))
        }
    }

    // MARK: Names

    static func name(_ text: String) throws(FuzzViolation) {
        let utf8 = Array(text.utf8)
        if let id = SpoolID(hex: text) {
            guard id.bytes.count == 16, id.hex == text else { throw FuzzViolation("spool name \(text.debugDescription) decodes as \(id)") }
        } else if utf8.count == 32, utf8.allSatisfy(isLowercaseHexDigit) {
            throw FuzzViolation("the spool name \(text.debugDescription) a store makes does not decode")
        }
        if let id = SpoolLayout.spoolID(fromName: text), SpoolLayout.spoolPrefix + id.hex != text {
            throw FuzzViolation("the directory \(text.debugDescription) is taken for spool \(id)")
        }
        if let id = SpoolLayout.spoolID(fromGuardName: text), SpoolLayout.spoolPrefix + id.hex + SpoolLayout.guardSuffix != text {
            throw FuzzViolation("the file \(text.debugDescription) is taken for the guard of spool \(id)")
        }
        // The directory and guard names of every spool the name could be.
        if let id = SpoolID(hex: text) {
            guard SpoolLayout.spoolID(fromName: id.description) == id,
                SpoolLayout.spoolID(fromGuardName: id.description + SpoolLayout.guardSuffix) == id
            else { throw FuzzViolation("the directory or guard of spool \(id) is not recognised") }
        }
    }

    static func isLowercaseHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    // MARK: Marks

    static func mark(_ bytes: [UInt8]) throws(FuzzViolation) {
        guard let sequence = SpoolMark.sequence(bytes) else {
            guard bytes.count != 8 else { throw FuzzViolation("an 8-byte mark does not decode") }
            return
        }
        let write = SpoolMark.write(SpoolID(bytes: Array(0..<16)), through: sequence)
        guard write.kind == .value, write.payload == bytes else {
            throw FuzzViolation("a mark decoded as \(sequence) is written as other bytes")
        }
    }

    // MARK: Spooled records

    static func record(_ bytes: [UInt8], format: RecordFormat, keyFromBody: Bool) throws(FuzzViolation) {
        guard bytes.count >= 17 else { return }
        let value = Array(bytes[17...])
        var key = LogKey(Array(bytes[..<17]))
        if keyFromBody, !format.isSealed, value.count >= 18 { key = format.entryKey(OutboxEntryID(bytes: Array(value[2..<18]))) }
        let other = Self.format(sealed: !format.isSealed)
        let body: EntryBody
        let moved: [UInt8]
        do throws(OutboxError) {
            (body, _) = try SpoolReading.entry(key: key, value: value, format: format, queueFormat: nil)
            (_, moved) = try SpoolReading.entry(key: key, value: value, format: format, queueFormat: other)
        } catch {
            return
        }
        let plain: [UInt8]
        do { plain = try format.plainBody(value, key: key) } catch {
            throw FuzzViolation("a spooled record that reads has no plain body: \(error)")
        }
        let encoded = EntryCodec.encode(body)
        guard encoded == plain else { throw FuzzViolation("a spooled entry read as \(body) encodes to other bytes") }
        // Moved into a queue of the other format: the same entry, under its key there.
        let kind = other.isSealed ? "sealed" : "plain"
        let again: EntryBody
        do { (again, _) = try SpoolReading.entry(key: other.entryKey(body.id), value: moved, format: other, queueFormat: nil) } catch {
            throw FuzzViolation("a spooled entry moved into a \(kind) queue does not read: \(error)")
        }
        guard again == body else { throw FuzzViolation("a spooled entry moved into a \(kind) queue reads as \(again)") }
    }

    // MARK: Set-aside records

    static func setAside(_ input: [UInt8], format: RecordFormat, repair: Bool) throws(FuzzViolation) {
        var bytes = input
        if repair, bytes.count >= 13 {
            let crc = CRC32.checksum(bytes[13...])
            bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 9, as: UInt32.self) }
        }
        let records = SetAsideRecords(queue: "/fuzz", format: format, fileSystem: PosixFileSystem())
        let content: [UInt8]
        do { content = try records.decode(bytes, name: setAsideName, path: FilePath("/fuzz/refused/" + setAsideName)) } catch { return }
        let again: [UInt8]
        do { again = try records.encode(content, name: setAsideName) } catch {
            throw FuzzViolation("a set-aside record that reads cannot be written again: \(error)")
        }
        if !format.isSealed {
            guard again == bytes else { throw FuzzViolation("a plain set-aside record that reads is not the file written for it") }
        } else {
            // A new nonce each time: compare the header and what the seal holds.
            guard again.prefix(9) == bytes.prefix(9),
                (try? records.decode(again, name: setAsideName, path: "/fuzz/again")) == content
            else { throw FuzzViolation("a sealed set-aside record that reads, written again, does not read back the same") }
        }
    }
}
