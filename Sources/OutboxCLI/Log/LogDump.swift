import ArgumentParser
import Foundation
import OutboxLog

/// `outbox log dump DIR [--json]`
struct LogDump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print every live record in sequence order, without changing anything.",
        discussion: """
            One line per live key: its value's sequence number, key, length and a preview, \
            and its annotation if it has one. With --json, one object per line: \
            {"sequence", "key" (or "keyBase64" when the key is not UTF-8), "type": "value", \
            "length" (payload bytes), "payload" (base64)} plus "annotation" (base64) and \
            "annotationSequence" when the key has an annotation, and "expiresAt" and \
            "annotationExpiresAt" (milliseconds since 1970) for records that carry an expiry.
            """
    )

    @OptionGroup var options: LogDirectoryOptions

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: """
        Serve the intact records past damage too, as 'outbox log verify' counts them, instead of \
        failing on damage (read-only: nothing is repaired).
        """)
    var salvage = false

    func run() async throws {
        let json = self.json
        try await options.withLog(.readOnly(salvage: salvage)) { log in
            options.warnIfDamaged(log.recoveryReport)
            let encoder = JSONLines()
            var output = OutputBuffer()
            for try await entry in log.allEntries() {
                output.line(json ? try encoder.encode(EntryJSON(entry)) : Self.line(for: entry))
            }
            output.flush()
        }
    }

    /// `<sequence>  <key>  <length> bytes  <preview>[  annotation #<sequence> <length> bytes <preview>]`
    static func line(for entry: LogEntry) -> String {
        var line = "\(entry.sequence)  \(entry.key)  \(entry.value.count) bytes  \(preview(entry.value))"
        if let expiry = entry.expiry { line += "  expires \(expiry)" }
        if let annotation = entry.annotation {
            line += "  annotation #\(annotation.sequence) \(annotation.payload.count) bytes  \(preview(annotation.payload))"
            if let expiry = annotation.expiry { line += "  expires \(expiry)" }
        }
        return line
    }

    /// Printable UTF-8 as a quoted string, anything else as hexadecimal; long payloads cut.
    static func preview(_ bytes: [UInt8], limit: Int = 40) -> String {
        if bytes.isEmpty { return "\"\"" }
        if let text = String(checkedUTF8: bytes),
            text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        {
            let cut = text.count > limit ? String(text.prefix(limit)) + "…" : text
            return "\"" + cut.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        let hex = bytes.prefix(limit / 2).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
        return "0x" + hex + (bytes.count > limit / 2 ? "…" : "")
    }
}

/// One live record as JSON.
struct EntryJSON: Encodable {
    var sequence: UInt64
    var key: String?
    var keyBase64: String?
    var type = "value"
    var length: Int
    var payload: String
    var annotation: String?
    var annotationSequence: UInt64?
    var expiresAt: Int64?
    var annotationExpiresAt: Int64?

    init(_ entry: LogEntry) {
        sequence = entry.sequence
        if let text = String(checkedUTF8: entry.key.bytes) {
            key = text
        } else {
            keyBase64 = Data(entry.key.bytes).base64EncodedString()
        }
        length = entry.value.count
        payload = Data(entry.value).base64EncodedString()
        expiresAt = entry.expiry
        if let note = entry.annotation {
            annotation = Data(note.payload).base64EncodedString()
            annotationSequence = note.sequence
            annotationExpiresAt = note.expiry
        }
    }
}
