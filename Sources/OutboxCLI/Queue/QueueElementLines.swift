import Foundation
import OutboxQueue

/// How `consume` and `relay` print elements: one per line, as their bytes,
/// or as JSON (exact: the bytes as text when they are UTF-8, else base64).
struct QueueElementLines {
    var json: Bool

    struct Line: Encodable {
        var position: UInt64
        /// Milliseconds since 1970.
        var appendedAt: Int64?
        var text: String?
        var base64: String?
    }

    /// Writes `elements` to standard output, throwing if the write fails (a
    /// closed pipe, say): the caller commits only what was written.
    func write(_ elements: [QueueElement]) async throws(CommandFailure) {
        var output: [UInt8] = []
        let lines = JSONLines()
        for element in elements {
            if json {
                var line = Line(position: element.position.rawValue)
                line.appendedAt = Int64(exactly: (element.appendedAt.timeIntervalSince1970 * 1000).rounded())
                if let text = String(validating: element.bytes, as: UTF8.self) { line.text = text } else {
                    line.base64 = Data(element.bytes).base64EncodedString()
                }
                output += Array(try lines.encode(line).utf8)
            } else {
                output += element.bytes
            }
            output.append(UInt8(ascii: "\n"))
        }
        try await OutputWriter.write(output)
    }
}
