import Foundation

/// Unbuffered writes to standard output and standard error.
///
/// Everything the tool prints goes through here, straight to the file
/// descriptor (no stdio buffer), so a line is visible to a reader of a pipe
/// as soon as it is written — `outbox log append` relies on it.
enum StandardStreams {
    /// Writes `text` to standard output now.
    static func write(_ text: String) {
        guard !text.isEmpty else { return }
        try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
    }

    /// Writes `line` and a line break to standard output now.
    static func writeLine(_ line: String) { write(line + "\n") }

    /// Writes a command's report: with `json`, `value` as one JSON object on
    /// a line (``JSONLines``); else the `text` line.
    static func writeReport(json: Bool, _ value: some Encodable, text: @autoclosure () -> String) throws(CommandFailure) {
        try writeLine(json ? JSONLines().encode(value) : text())
    }

    /// Writes `line` and a line break to standard error now.
    static func writeError(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}

/// Collects output lines and writes them in chunks: for commands that print
/// many lines (`dump`).
struct OutputBuffer {
    private var pending = ""
    private let limit: Int

    init(limit: Int = 64 << 10) { self.limit = limit }

    mutating func line(_ line: String) {
        pending += line
        pending += "\n"
        if pending.utf8.count >= limit { flush() }
    }

    mutating func flush() {
        StandardStreams.write(pending)
        pending = ""
    }
}

/// One JSON object per line: sorted, stable key names, no escaped slashes
/// (base64 contains `/`).
struct JSONLines {
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func encode(_ value: some Encodable) throws(CommandFailure) -> String {
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw CommandFailure("cannot encode JSON: \(error)", exitCode: CommandFailure.operationFailed)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// "12.3 ms", "1.20 s".
    var readable: String {
        let value = seconds
        if value < 1 { return String(format: "%.1f ms", value * 1000) }
        return String(format: "%.2f s", value)
    }
}
