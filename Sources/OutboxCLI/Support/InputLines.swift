import Foundation
import OutboxLocking

/// The lines of a file descriptor (standard input), a batch at a time, each
/// without its line break: bytes as they are, not decoded.
///
/// Each read blocks until the writer writes or closes, so it runs on a
/// dispatch queue of its own, never on Swift's cooperative pool; the next
/// read starts only when the caller asks for the next batch (back-pressure:
/// at most one chunk is held ahead of the caller).
final class InputLines: Sendable {
    /// Why reading stopped early.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let descriptor: Int32
    private let maximumLine: Int
    private let reading = DispatchQueue(label: "outbox.input-lines")
    /// Bytes after the last line break read so far, and whether the input ended.
    private let state = Locked<(partial: [UInt8], ended: Bool, lines: Int)>(([], false, 0))

    /// - Parameter maximumLine: the longest line accepted, in bytes.
    init(descriptor: Int32 = STDIN_FILENO, maximumLine: Int) {
        self.descriptor = descriptor
        self.maximumLine = maximumLine
    }

    /// The lines completed by the next read (at most 64 KiB of input), or
    /// `nil` at the end. A last line without a line break counts.
    func next() async throws(Failure) -> [[UInt8]]? {
        let outcome: Result<[[UInt8]]?, Failure> = await withCheckedContinuation { continuation in
            reading.async { continuation.resume(returning: self.readBatch()) }
        }
        return try outcome.get()
    }

    private func readBatch() -> Result<[[UInt8]]?, Failure> {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            if state.withLock({ $0.ended }) { return .success(nil) }
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(Failure(description: "reading standard input failed: \(String(cString: strerror(errno)))"))
            }
            let outcome = state.withLock { state -> Result<[[UInt8]]?, Failure>? in
                if count == 0 {
                    state.ended = true
                    guard !state.partial.isEmpty else { return .success(nil) }
                    defer { state.partial = [] }
                    return .success([state.partial])
                }
                var lines: [[UInt8]] = []
                for byte in chunk[..<count] {
                    if byte == UInt8(ascii: "\n") {
                        lines.append(state.partial)
                        state.partial = []
                        state.lines += 1
                    } else {
                        guard state.partial.count < maximumLine else {
                            return .failure(Failure(description: "line \(state.lines + 1) of standard input is longer than \(maximumLine) bytes"))
                        }
                        state.partial.append(byte)
                    }
                }
                return lines.isEmpty ? nil : .success(lines)
            }
            if let outcome { return outcome }
        }
    }
}
